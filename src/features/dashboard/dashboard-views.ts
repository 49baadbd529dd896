import { JobSchedulerStatus } from '../job-scheduler/job-scheduler.entity';
import type { ExpiredJobLease, JobRunView } from '../job-scheduler/operations/job-run.types';
export type { JobHealthState } from './dashboard-health';
import type { ScheduleDescription } from './schedule-words';

import type { JobHealthState, JobHealthWindow, JobStateWindow } from './dashboard-health';

export interface DashboardJob {
  name: string;
  /** declared: @Scheduled; run-once: a @RunOnce method over @nestjs/schedule's @Cron. */
  kind: 'declared' | 'run-once';
  /** The @RunOnce method (Class.method), or null. */
  method: string | null;
  schedule: ScheduleDescription;
  /** The next three due instants (none while disabled). */
  nextDue: string[];
  lastSuccessAt: string | null;
  /** How its newest finished occurrence ended (null without one). */
  lastOutcome: 'succeeded' | 'failed' | 'missed' | 'taken-over' | null;
  health: JobHealthState;
  /** The window the health is judged over (last 10 occurrences, last 24 h). */
  window: JobHealthWindow;
  /** Set while an operator has it paused. */
  paused: { by: string; at: string } | null;
  /** Switched off by SchedulingModule settings (enabled: false). */
  disabledBySettings: boolean;
  /** Which actions this kind of job has, and why not when it has none. */
  actions: { runNow: boolean; pause: boolean; why: string | null };
}

/** A failing job as "Needs attention" lists it: what its 10 newest finished occurrences say. */
export interface DashboardFailingJob {
  name: string;
  kind: 'declared' | 'run-once';
  window: JobStateWindow;
}

/** A page of the jobs list, with the failing jobs among all of them. */
export interface DashboardJobsPage {
  jobs: DashboardJob[];
  /** The cursor of the next page (`after`), or null on the last. */
  nextCursor: string | null;
  /** Jobs that match the search (all of them without one). */
  total: number;
  /** Jobs a page holds at most (the query's limit, 50 without one). */
  pageSize: number;
  /** The failing jobs among all (not only this page or search), the first 25 by name. */
  failing: DashboardFailingJob[];
  /** How many jobs are failing in all. */
  failingTotal: number;
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
  /**
   * When the handler started: the run's finishedAt minus the handler's run time its scheduler
   * recorded (data.handlerMs), both on the database's clock. Null while it runs, and for a run
   * that recorded none (a lease used by hand, a run finished before 2.0's handlerMs).
   */
  startedAt: string | null;
  /** When the lease was claimed (the table's startedAt, written by the acquire): before the handler starts, possibly before the due instant. */
  claimedAt: string | null;
  /** The due instant of a scheduled occurrence, or the instant a "run now" was asked; null for other keys. */
  dueAt: string | null;
  finishedAt: string | null;
  heartbeatAgeMs: number;
  /** Why a FAIL row failed, as recorded (data.outcome: missed, skipped-overlap...), or null. */
  outcome: string | null;
  /** A FAIL row's error message (data.error.message), or null. */
  errorMessage: string | null;
}

/** A run's detail: everything but the owner token (never read from the table). */
export interface DashboardRunDetail extends DashboardRunSummary {
  name: string | null;
  idempotencyKey: string;
  leaseMs: number | null;
  modifiedAt: string;
  data: unknown;
  /** What this run failed with (a FAIL row's data.error, else its data), or null. */
  error: unknown;
  /** Why the previous owner lost the run (written when it was taken over or released), or null. */
  lastError: unknown;
}

export interface DashboardExpiredLease extends DashboardRunSummary {
  leaseMs: number | null;
  overdueMs: number;
}

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());

const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null && Object.hasOwn(value, name) ? (value as Record<string, unknown>)[name] : undefined;

/** The instant a run key starts with: an occurrence's due instant ("<ISO>...", "schedule=<id> <ISO>") or a run now's ("run-now <ISO> ..."). */
export const dueAtOf = (runKey: string | null): string | null => {
  const match = runKey === null ? null : /^(?:schedule=\S+ |run-now )?(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)(?: |$)/.exec(runKey);
  return match ? match[1] : null;
};

/** The handler's start: finishedAt - data.handlerMs (the scheduler's record of how long the handler ran), else null. */
export const handlerStartOf = (run: Pick<JobRunView, 'finishedAt' | 'data'>): string | null => {
  const handlerMs = field(run.data, 'handlerMs');
  if (run.finishedAt === null || typeof handlerMs !== 'number' || !Number.isFinite(handlerMs) || handlerMs < 0) return null;
  return new Date(run.finishedAt.getTime() - handlerMs).toISOString();
};

const failureOf = (run: JobRunView): { outcome: string | null; error: unknown; message: string | null } => {
  if (run.status !== JobSchedulerStatus.FAIL) return { outcome: null, error: null, message: null };
  const outcome = field(run.data, 'outcome');
  const error = field(run.data, 'error') ?? run.data ?? null;
  const message = field(error, 'message');
  return { outcome: typeof outcome === 'string' ? outcome : null, error, message: typeof message === 'string' ? message.slice(0, 500) : null };
};

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
  startedAt: handlerStartOf(run),
  claimedAt: iso(run.startedAt),
  dueAt: dueAtOf(run.runKey),
  finishedAt: iso(run.finishedAt),
  heartbeatAgeMs: run.heartbeatAgeMs,
  outcome: failureOf(run).outcome,
  errorMessage: failureOf(run).message,
});

export const runDetail = (run: JobRunView): DashboardRunDetail => ({
  ...runSummary(run),
  name: run.name,
  idempotencyKey: run.idempotencyKey,
  leaseMs: run.leaseMs,
  modifiedAt: run.modifiedAt.toISOString(),
  data: run.data,
  error: failureOf(run).error,
  lastError: run.lastError,
});

export const expiredLease = (lease: ExpiredJobLease): DashboardExpiredLease => ({
  ...runSummary(lease),
  leaseMs: lease.leaseMs,
  overdueMs: lease.overdueMs,
});
