import { optionalPeer, singleMetric } from '../../job-scheduler/telemetry/lease-telemetry';
import type { SchedulerMetrics } from '../scheduler-ports';
import type { JobRunRecord } from '../scheduling.types';

interface PromClient {
  register: unknown;
  Counter: new (config: object) => { inc(labels: object, value?: number): void };
  Histogram: new (config: object) => { observe(labels: object, value: number): void };
  Gauge: new (config: object) => { set(labels: object, value: number): void };
}

/**
 * scheduled_job_runs_total{job,outcome}, scheduled_job_duration_seconds{job,outcome},
 * scheduled_job_last_success_timestamp_seconds{job} and scheduled_job_take_overs_total{job,outcome}
 * (occurrences whose holder vanished: run again, or ended `abandoned`). Labels: the job name and
 * the outcome only.
 */
export const createPrometheusJobMetrics = (registryOption?: unknown): SchedulerMetrics | undefined => {
  const client = optionalPeer<PromClient>('prom-client');
  if (!client) return undefined;
  const registry = registryOption ?? client.register;
  const registers = [registry];
  const runs = singleMetric(
    registry,
    'scheduled_job_runs_total',
    () =>
      new client.Counter({
        name: 'scheduled_job_runs_total',
        help: 'Occurrences of scheduled jobs seen by this instance, by job and outcome',
        labelNames: ['job', 'outcome'],
        registers,
      }),
  );
  const duration = singleMetric(
    registry,
    'scheduled_job_duration_seconds',
    () =>
      new client.Histogram({
        name: 'scheduled_job_duration_seconds',
        help: 'Duration of scheduled job runs on this instance, by job and outcome',
        labelNames: ['job', 'outcome'],
        buckets: [0.01, 0.05, 0.25, 1, 5, 15, 60, 300, 900, 3600],
        registers,
      }),
  );
  const lastSuccess = singleMetric(
    registry,
    'scheduled_job_last_success_timestamp_seconds',
    () =>
      new client.Gauge({
        name: 'scheduled_job_last_success_timestamp_seconds',
        help: 'When a run of the job last succeeded on this instance (Unix seconds)',
        labelNames: ['job'],
        registers,
      }),
  );
  const takeOvers = singleMetric(
    registry,
    'scheduled_job_take_overs_total',
    () =>
      new client.Counter({
        name: 'scheduled_job_take_overs_total',
        help: 'Occurrences whose holder vanished, run again (succeeded, failed) or ended unrun (abandoned) by this instance',
        labelNames: ['job', 'outcome'],
        registers,
      }),
  );
  return {
    record: (record: JobRunRecord, count = 1) => {
      runs.inc({ job: record.name, outcome: record.outcome }, count);
      if (record.trigger === 'take-over' && record.outcome !== 'skipped-locked' && record.outcome !== 'skipped-overlap') {
        takeOvers.inc({ job: record.name, outcome: record.outcome }, count);
      }
      if (record.durationMs !== undefined) duration.observe({ job: record.name, outcome: record.outcome }, record.durationMs / 1000);
      if (record.outcome === 'succeeded' && record.finishedAt) lastSuccess.set({ job: record.name }, record.finishedAt.getTime() / 1000);
    },
  };
};
