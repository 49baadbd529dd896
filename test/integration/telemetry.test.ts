import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Registry } from 'prom-client';
import { JobSchedulerService } from '../../src/features';
import { FixedClock, ManualJobScheduler } from '../../src/features/testing';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

let database: TestDatabase;
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(async () => {
  trace.setGlobalTracerProvider(provider);
  database = await createTestDatabase();
});
afterAll(async () => {
  trace.disable();
  await database.drop();
});

it('counts lease outcomes in prom-client and traces each operation without the owner token', async () => {
  const registry = new Registry();
  const jobs = new JobSchedulerService(await database.dataSource(), { telemetry: { metrics: { registry } } });
  const other = new JobSchedulerService(await database.dataSource(), { telemetry: { metrics: { registry } } });
  const request = { code: 'telemetry', runKey: 'r1' };
  const lock = await jobs.acquire(request);
  if (!lock.acquired) throw new Error('expected to acquire');
  expect(await other.acquire(request)).toEqual({ acquired: false });
  expect(await jobs.heartbeat(lock)).toBe(true);
  expect(await jobs.complete(lock)).toBe(true);
  expect(await other.acquire(request)).toEqual({ acquired: false });
  expect(await jobs.complete(lock)).toBe(false);
  const failed = await jobs.acquire({ code: 'telemetry', runKey: 'r2' });
  if (failed.acquired) await jobs.fail(failed);
  expect(await other.acquire({ code: 'telemetry', runKey: 'r2', reclaimFailed: false })).toEqual({ acquired: false });
  expect((await other.acquire({ code: 'telemetry', runKey: 'r2' })).acquired).toBe(true);

  const metrics = await registry.getMetricsAsJSON();
  const operations = metrics.find((metric) => metric.name === 'job_lease_operations_total');
  const counts = Object.fromEntries((operations?.values ?? []).map((value) => [`${value.labels.operation}:${value.labels.outcome}`, value.value]));
  expect(counts).toEqual({
    'acquire:acquired': 2,
    'acquire:held': 1,
    'acquire:success-locked': 1,
    'acquire:fail-locked': 1,
    'acquire:reclaimed': 1,
    'heartbeat:extended': 1,
    'complete:applied': 1,
    'complete:lost': 1,
    'fail:applied': 1,
  });
  expect(metrics.map((metric) => metric.name)).toEqual(expect.arrayContaining(['job_lease_operation_duration_seconds', 'job_lease_lost_total']));

  const spans = exporter.getFinishedSpans();
  expect(spans.map((span) => span.name)).toEqual(expect.arrayContaining(['job_lease.acquire', 'job_lease.heartbeat', 'job_lease.complete', 'job_lease.fail']));
  const acquire = spans.find((span) => span.name === 'job_lease.acquire');
  expect(acquire?.attributes).toMatchObject({ 'job.code': 'telemetry', 'job.idempotency_key': lock.idempotencyKey, 'job_lease.outcome': 'acquired' });
  const everyValue = spans.flatMap((span) => Object.values(span.attributes).map(String));
  expect(everyValue).not.toContain(lock.ownerToken);
});

it('counts each lease of a statement over many (heartbeatMany, completeMany, failMany) as its own outcome', async () => {
  const registry = new Registry();
  const jobs = new JobSchedulerService(await database.dataSource(), { telemetry: { metrics: { registry } } });
  const leases = (await jobs.acquireBatch({ code: 'telemetry.many', runKeys: ['a', 'b', 'c'] })).flatMap((result) => (result.acquired ? [result] : []));
  const forged = { id: leases[2].id, ownerToken: '00000000-0000-4000-8000-000000000000' };
  expect(await jobs.heartbeatMany([leases[0], leases[1], forged])).toEqual([true, true, false]);
  expect(await jobs.completeMany([leases[0], forged])).toEqual([true, false]);
  expect(await jobs.failMany([leases[1], leases[2]])).toEqual([true, true]);
  const operations = (await registry.getMetricsAsJSON()).find((metric) => metric.name === 'job_lease_operations_total');
  const counts = Object.fromEntries((operations?.values ?? []).map((value) => [`${value.labels.operation}:${value.labels.outcome}`, value.value]));
  expect(counts).toMatchObject({ 'heartbeat:extended': 2, 'heartbeat:lost': 1, 'complete:applied': 1, 'complete:lost': 1, 'fail:applied': 2 });
});

it('traces each scheduled job run with its name, due instant and key', async () => {
  exporter.reset();
  const scheduler = new ManualJobScheduler({ clock: new FixedClock(0) });
  scheduler.register({ name: 'reports.traced', every: '1m', run: () => undefined });
  await scheduler.start();
  await scheduler.advance(60_000);
  const [span] = exporter.getFinishedSpans().filter((finished) => finished.name === 'scheduled_job.run');
  expect(span?.attributes).toMatchObject({ 'job.name': 'reports.traced', 'job.scheduled_at': '1970-01-01T00:01:00.000Z', 'job.trigger': 'schedule' });
  expect(String(span?.attributes['job.idempotency_key'])).toMatch(/^v2:/);
});

it('is a no-op when metrics are turned off', async () => {
  const registry = new Registry();
  const jobs = new JobSchedulerService(await database.dataSource(), { telemetry: { metrics: false, tracing: false } });
  expect((await jobs.acquire({ code: 'quiet', runKey: 'r' })).acquired).toBe(true);
  expect(await registry.getMetricsAsJSON()).toEqual([]);
});
