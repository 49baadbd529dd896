import type { ExpiredJobLease, JobRunView } from '../job-scheduler/operations/job-run.types';
import type { ScheduleDescription } from './schedule-words';

/** ok: on schedule; late: two or more due occurrences without a success; failing: the latest occurrence failed; disabled: paused or switched off. */
export type JobHealthState = 'ok' | 'late' | 'failing' | 'disabled';

export interface DashboardJob {
  name: string;
  schedule: ScheduleDescription;
  /** The next three due instants (none while disabled). */
  nextDue: string[];
  lastSuccessAt: string | null;
  health: JobHealthState;
  /** Set while an operator has it paused. */
  paused: { by: string; at: string } | null;
  /** Switched off by SchedulingModule settings (enabled: false). */
  disabledBySettings: boolean;
}

/** A run in the list: what identifies it and how it stands. */
export interface DashboardRunSummary {
  id: string;
  code: string;
  type: string;
  status: string;
  runKey: string | null;
  attempts: number;
  fencingToken: number;
  ownerId: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  heartbeatAgeMs: number;
}

/** A run's detail: everything but the owner token (never read from the table). */
export interface DashboardRunDetail extends DashboardRunSummary {
  name: string | null;
  idempotencyKey: string;
  leaseMs: number | null;
  modifiedAt: string;
  data: unknown;
  lastError: unknown;
}

export interface DashboardExpiredLease extends DashboardRunSummary {
  leaseMs: number | null;
  overdueMs: number;
}

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());

/** Field by field (a whitelist): a column added to JobRunView later is not shown until listed here. */
export const runSummary = (run: JobRunView): DashboardRunSummary => ({
  id: run.id,
  code: run.code,
  type: run.type,
  status: run.status,
  runKey: run.runKey,
  attempts: run.attempts,
  fencingToken: run.fencingToken,
  ownerId: run.ownerId,
  createdAt: run.createdAt.toISOString(),
  startedAt: iso(run.startedAt),
  finishedAt: iso(run.finishedAt),
  heartbeatAgeMs: run.heartbeatAgeMs,
});

export const runDetail = (run: JobRunView): DashboardRunDetail => ({
  ...runSummary(run),
  name: run.name,
  idempotencyKey: run.idempotencyKey,
  leaseMs: run.leaseMs,
  modifiedAt: run.modifiedAt.toISOString(),
  data: run.data,
  lastError: run.lastError,
});

export const expiredLease = (lease: ExpiredJobLease): DashboardExpiredLease => ({
  ...runSummary(lease),
  leaseMs: lease.leaseMs,
  overdueMs: lease.overdueMs,
});
