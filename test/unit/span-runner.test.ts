import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createSpanRunner } from '../../src/features/job-scheduler/telemetry/lease-telemetry';

/**
 * With @opentelemetry/api installed but no tracer provider registered, a span would be a no-op
 * that still costs its objects: the runner runs alone and never builds the attributes. Once a
 * provider is registered (after the runner was made, as an SDK started late is), every run is traced.
 */
afterEach(() => trace.disable());

it('runs without a span, and without building its attributes, until a tracer provider is registered; then traces every run', async () => {
  const span = createSpanRunner();
  let built = 0;
  const attributes = () => {
    built++;
    return { 'job.name': 'reports' };
  };
  const seen: unknown[] = [];
  await expect(span('scheduled_job.run', attributes, async (active) => (seen.push(active), 'ran'))).resolves.toBe('ran');
  expect(seen).toEqual([undefined]);
  expect(built).toBe(0);

  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  await expect(span('scheduled_job.run', attributes, async (active) => (seen.push(active), 'traced'))).resolves.toBe('traced');
  await expect(span('scheduled_job.run', attributes, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  expect(seen[1]).toBeDefined();
  expect(built).toBe(2);
  const spans = exporter.getFinishedSpans();
  expect(spans.map((finished) => [finished.name, finished.attributes['job.name'], finished.status.code])).toEqual([
    ['scheduled_job.run', 'reports', 0],
    ['scheduled_job.run', 'reports', 2],
  ]);
});

it('never traces when tracing is off, whatever is registered', async () => {
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  const span = createSpanRunner(false);
  await expect(
    span(
      'scheduled_job.run',
      () => ({}),
      async (active) => active,
    ),
  ).resolves.toBeUndefined();
  expect(exporter.getFinishedSpans()).toEqual([]);
});
