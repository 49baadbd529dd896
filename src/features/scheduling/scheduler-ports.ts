import type {
  JobAcquireManyOptions,
  JobAcquireManyRun,
  JobAcquireOptions,
  JobAcquireResult,
  JobBatchAcquireOptions,
  JobFinalizeOptions,
  JobLease,
  JobLeaseWithData,
} from '../job-scheduler/job-scheduler.types';
import type { TakeOverBatch, TakeOverKey } from '../job-scheduler/lease-take-over';
import type { HoldClock } from '../job-scheduler/run/lease-hold';
import type { InstantTimers } from '../job-scheduler/system-timers';
import type { JobRunRecord } from './scheduling.types';

/** Time for the scheduler: the system clock in production, a manual clock in tests. */
export interface SchedulerTimers extends InstantTimers {
  /** The clock of a lease holder's deadline; by default, derived from now() and at(). */
  holdClock?: HoldClock;
  /**
   * Told of every lease operation the scheduler waits on, so that a manual clock can let it
   * finish before it fires the next timer. System timers need not implement it.
   */
  observe?(operation: Promise<unknown>): void;
  /**
   * at(), for the next period of a PeriodicTask (`periodMs` apart). Manual timers may move such a
   * timer on by whole periods without firing it while their owner says the work would find
   * nothing (see ManualTimers). Optional: at() otherwise.
   */
  atPeriod?(instant: number, periodMs: number, fn: () => void): () => void;
}

/** The timers' clock for waits measured in durations: monotonic on system timers, the manual clock in tests. */
export const holdClockOf = (timers: SchedulerTimers): HoldClock =>
  timers.holdClock ?? {
    now: () => timers.now(),
    after: (delayMs, fn) => timers.at(timers.now() + delayMs, fn),
  };

/** The lease, with each operation shown to the timers (for manual clocks over a real database). */
export const observedLease = (lease: SchedulerLease, timers: SchedulerTimers): SchedulerLease => {
  const observe = timers.observe?.bind(timers);
  if (!observe) return lease;
  const seen = <T>(operation: Promise<T>): Promise<T> => {
    observe(operation);
    return operation;
  };
  return {
    acquire: (options) => seen(lease.acquire(options)),
    acquireBatch: (options) => seen(lease.acquireBatch(options)),
    acquireMany: lease.acquireMany && ((runs, options) => seen(lease.acquireMany!(runs, options))),
    acquireAhead: lease.acquireAhead && ((options) => seen(lease.acquireAhead!(options))),
    acquireAgain: lease.acquireAgain && ((options) => seen(lease.acquireAgain!(options))),
    heartbeat: (value, options) => seen(lease.heartbeat(value, options)),
    heartbeatMany: lease.heartbeatMany && ((leases, options) => seen(lease.heartbeatMany!(leases, options))),
    complete: (value, data, options) => seen(lease.complete(value, data, options)),
    fail: (value, data, options) => seen(lease.fail(value, data, options)),
    failMany: lease.failMany && ((leases, data, options) => seen(lease.failMany!(leases, data, options))),
    completeMany: lease.completeMany && ((leases, data, options) => seen(lease.completeMany!(leases, data, options))),
    expireMany: lease.expireMany && ((leases) => seen(lease.expireMany!(leases))),
  };
};

/** The cross-instance lock: JobSchedulerService on PostgreSQL, or the in-memory lease of tests. */
export interface SchedulerLease {
  acquire(options: JobAcquireOptions): Promise<JobAcquireResult>;
  /** Several runs of one code in one statement (a per-tenant occurrence): results in the order of `runKeys`. */
  acquireBatch(options: JobBatchAcquireOptions): Promise<JobAcquireResult[]>;
  /**
   * Several runs of any codes in one statement (the jobs due at one instant): results in order.
   * A run may name its owner token; `{ again }` retries a claim whose answer was lost
   * (JobSchedulerService.acquireMany). Optional: without it, every occurrence is acquired by a
   * statement of its own, and claims are never retried so.
   */
  acquireMany?(runs: readonly JobAcquireManyRun[], options?: JobAcquireManyOptions): Promise<JobAcquireResult[]>;
  /** acquire, for an occurrence claimed ahead of its instant (batched and spread by the scheduler). Optional: acquire otherwise. */
  acquireAhead?(options: JobAcquireManyRun): Promise<JobAcquireResult>;
  /**
   * acquire again, for a claim whose answer was lost, under the owner token it named: the run it
   * won comes back acquired (acquireMany with `{ again: true }`, batched). Optional: acquire otherwise.
   */
  acquireAgain?(options: JobAcquireManyRun): Promise<JobAcquireResult>;
  /** `timeoutMs`: a tighter bound on this one statement (a heartbeat is bounded by its interval). */
  heartbeat(lease: JobLease, options?: { timeoutMs?: number }): Promise<boolean>;
  /** heartbeat for many leases in few statements, whether each is still held. Optional: without it, one heartbeat each. */
  heartbeatMany?(leases: readonly JobLease[], options?: { timeoutMs?: number }): Promise<boolean[]>;
  /** `{ again }`: a retry, also true when this owner already finalized the run so (JobSchedulerService.complete). */
  complete(lease: JobLease, data?: unknown, options?: JobFinalizeOptions): Promise<boolean>;
  fail(lease: JobLease, data?: unknown, options?: JobFinalizeOptions): Promise<boolean>;
  /** fail for many leases in few statements, whether each applied. Optional: without it, one fail each. */
  failMany?(leases: readonly JobLease[], data?: unknown, options?: JobFinalizeOptions): Promise<boolean[]>;
  /**
   * complete for many leases in few statements, a lease's own `data` in place of `data` (the
   * scheduler's runs each record their handler's run time); `{ again }` as complete's. Optional:
   * without it, one complete each.
   */
  completeMany?(leases: readonly JobLeaseWithData[], data?: unknown, options?: JobFinalizeOptions): Promise<boolean[]>;
  /** Leases given up unfinished, left RUNNING with their lease run out: taken over elsewhere (JobSchedulerService.expireMany). */
  expireMany?(leases: readonly JobLease[]): Promise<boolean[]>;
}

/** Durable history: the latest occurrence any instance recorded for a job. */
export interface SchedulerHistory {
  /**
   * The latest due instant (epoch ms) recorded for the job, at or before `until` when it is given,
   * or null when it has none. The scheduler's boot asks as of its instant: an occurrence still to
   * come, claimed ahead meanwhile (by this instance or another), must not hide the ones that passed.
   */
  latestOccurrence(jobName: string, until?: number): Promise<number | null>;
  /**
   * The same for many jobs in one read: job name → latest due instant, for the jobs that have
   * history. Optional: without it, `latestOccurrence` is asked once per job.
   */
  latestOccurrences?(jobNames: readonly string[], until?: number): Promise<ReadonlyMap<string, number>>;
  /**
   * The due instants in [from, until) some instance recorded for the job (any tenant): a lagging
   * instance reports as missed only the others. Without it, every passed instant is reported.
   */
  recordedOccurrences?(jobName: string, from: number, until: number): Promise<number[]>;
}

/** The latest occurrence of each job at or before `until`, in one read when the history can, else one per job. */
export const latestOccurrencesOf = async (
  history: SchedulerHistory | undefined,
  jobNames: readonly string[],
  until: number,
): Promise<ReadonlyMap<string, number>> => {
  if (!history || jobNames.length === 0) return new Map();
  if (history.latestOccurrences) return history.latestOccurrences(jobNames, until);
  const found = new Map<string, number>();
  await Promise.all(
    jobNames.map(async (name) => {
      const latest = await history.latestOccurrence(name, until);
      if (latest !== null) found.set(name, latest);
    }),
  );
  return found;
};

/** Where outcomes go besides listeners: metrics. */
export interface SchedulerMetrics {
  /** Counts `count` outcomes like `record` (default 1). */
  record(record: JobRunRecord, count?: number): void;
}

/** Whatever logs: Nest's Logger fits. */
export interface SchedulerLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string, stack?: string): void;
  debug?(message: string): void;
}

export { systemTimers } from '../job-scheduler/system-timers';

/** Where abandoned occurrences are claimed and ended: JobSchedulerService on PostgreSQL. */
export interface AbandonedOccurrenceStore {
  /** Claims up to `limit` abandoned occurrences of `keys` due by `dueBy` (one per key), and finds those to end. */
  takeOverAbandoned(keys: readonly TakeOverKey[], options: { dueBy: number; limit: number }): Promise<TakeOverBatch>;
  /**
   * Of these codes, the (code, runKey prefix) pairs with abandoned occurrences due by `dueBy`, up to
   * `limit`. Optional: a scan over more than PROBE_ABOVE_KEYS keys asks it first, then claims with
   * only the keys found (without it, every scan sends every key).
   */
  abandonedKeys?(codes: readonly string[], options: { dueBy: number; limit: number }): Promise<Array<{ code: string; prefix: string }>>;
  /** Ends these FAIL with their data, each unless taken over or ended meanwhile: whether each applied. */
  abandonOccurrences(occurrences: readonly { id: string; attempts: number; handedOver: boolean; data: unknown }[]): Promise<boolean[]>;
  /** Ends FAIL every abandoned occurrence of each (code, runKey prefix): the rows ended. */
  abandonRunKeyRanges(ranges: readonly { code: string; prefix: string; data: unknown }[]): Promise<{ id: string; code: string; runKey: string }[]>;
  /** Hands claimed occurrences back (RUNNING, lease run out, marked handed over) for another instance or scan. */
  expireMany(leases: readonly JobLease[]): Promise<boolean[]>;
  fail(lease: JobLease, data?: unknown): Promise<boolean>;
  /**
   * Of these dynamic schedule ids, those still stored (not removed). Given by the dynamic
   * schedules; without it, the occurrences of a schedule not known here are left to the instances
   * that know it.
   */
  liveSchedules?(scheduleIds: readonly string[]): Promise<ReadonlySet<string>>;
}

/** Whether a lease (the PostgreSQL one, the in-memory one of tests) can take abandoned occurrences over. */
export const canFindAbandoned = (lease: object): lease is AbandonedOccurrenceStore =>
  typeof (lease as Partial<AbandonedOccurrenceStore>).takeOverAbandoned === 'function' &&
  typeof (lease as Partial<AbandonedOccurrenceStore>).abandonOccurrences === 'function' &&
  typeof (lease as Partial<AbandonedOccurrenceStore>).abandonRunKeyRanges === 'function' &&
  typeof (lease as Partial<AbandonedOccurrenceStore>).expireMany === 'function' &&
  typeof (lease as Partial<AbandonedOccurrenceStore>).fail === 'function';

/** A store that also tells which dynamic schedules are still stored (the dynamic schedules' take-over). */
export const withLiveSchedules = (
  store: AbandonedOccurrenceStore,
  liveSchedules: (scheduleIds: readonly string[]) => Promise<ReadonlySet<string>>,
): AbandonedOccurrenceStore => ({
  takeOverAbandoned: (keys, options) => store.takeOverAbandoned(keys, options),
  ...(store.abandonedKeys ? { abandonedKeys: store.abandonedKeys.bind(store) } : {}),
  abandonOccurrences: (occurrences) => store.abandonOccurrences(occurrences),
  abandonRunKeyRanges: (ranges) => store.abandonRunKeyRanges(ranges),
  expireMany: (leases) => store.expireMany(leases),
  fail: (lease, data) => store.fail(lease, data),
  liveSchedules,
});
