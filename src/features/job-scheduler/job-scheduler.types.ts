import type { JobSchedulerType } from './job-scheduler.entity';

/** The logical identity of a run and the timing of its lease. */
export interface JobAcquireOptions {
  /** Trimmed; 1–64 characters. */
  code: string;
  /** Required for SCHEDULE (nonblank, at most 1,024 characters, trimmed); forbidden for INITIAL. */
  runKey?: string;
  /** A label for operators; at most 256 characters. Not part of the identity. */
  name?: string;
  /** Defaults to SCHEDULE. */
  type?: JobSchedulerType;
  /** Positive safe integer > 2, at most 2^31-1. Defaults to the module default, else 15 minutes. */
  leaseMs?: number;
  /** 0 (off) or a safe integer below leaseMs / 2. Defaults to min(60 s, leaseMs / 3). */
  heartbeatMs?: number;
  /**
   * Whether a FAIL row may be taken over by this acquire (default true). The scheduler passes
   * false: a failed occurrence is over and the next occurrence is the retry.
   */
  reclaimFailed?: boolean;
}

/**
 * Several runs of one code, claimed in one statement (`acquireBatch`): every field of
 * JobAcquireOptions but `runKey`, shared by the runs, and the runs' distinct `runKeys` (at most
 * 1,000). SCHEDULE only: INITIAL has one run per code.
 */
export interface JobBatchAcquireOptions extends Omit<JobAcquireOptions, 'runKey'> {
  runKeys: readonly string[];
}

/** One run of `acquireMany`: acquire's options, plus the owner token the run gets if won, when the caller draws it. */
export interface JobAcquireManyRun extends JobAcquireOptions {
  /**
   * A UUID the caller drew (`crypto.randomUUID()`): the run's owner token if this claim wins it.
   * Kept as secret as the token it becomes. Default: drawn by the database. Name it to be able to
   * retry the claim with `{ again: true }` when its answer is lost.
   */
  ownerToken?: string;
}

/** Options of acquireMany. */
export interface JobAcquireManyOptions {
  /**
   * This call repeats one whose answer was lost (a timeout, a dropped connection: it may have
   * committed), with the same owner tokens: a run that call won, still RUNNING under its token, is
   * acquired again (same id, fencing token and attempt, its lease renewed) instead of lost.
   */
  again?: boolean;
  /**
   * Announce the runs this call wins to the other instances on the same table (NOTIFY when the
   * statement commits), and skip the runs another instance announced it won within the last half
   * of their lease: those come back not acquired without a statement, as they would have lost to
   * that row. What instances claiming the same runs one after the other use to send one claim
   * instead of one each. Not with `again` or `reclaimFailed` (those runs are always sent). Listens
   * on a connection of its own (see the option `announceClaims`).
   */
  announce?: boolean;
}

/** The fencing capability: whoever holds both may heartbeat and finalize the run. */
export interface JobLease {
  id: string;
  ownerToken: string;
}

/**
 * A lease given to completeMany / failMany with data of its own: its row gets `data` instead of
 * the call's (undefined: the call's). The scheduler completes the runs that ended together so,
 * each with its handler's run time.
 */
export interface JobLeaseWithData extends JobLease {
  data?: unknown;
}

/** Options of complete and fail. */
export interface JobFinalizeOptions {
  /**
   * This call repeats one whose answer was lost (a timeout, a dropped connection): it is also
   * applied (true) when this owner already finalized the run the same way.
   */
  again?: boolean;
}

/** What a winner knows about the run it owns. */
/** Options of runAcquired. */
export interface JobRunAcquiredOptions {
  /**
   * Record how long the callback ran in the row's data as `handlerMs` (whole ms, monotonic clock):
   * `{ handlerMs }` on SUCCESS instead of null, `handlerMs` beside `error` on FAIL. The dashboard
   * shows the callback's start as finishedAt - handlerMs. Default false (the 1.x row data).
   */
  recordHandlerMs?: boolean;
}

export interface JobAcquiredLease extends JobLease {
  /** Stable for the logical run across reclaims; begins with `v2:`. */
  idempotencyKey: string;
  /** 1 on the first owner, +1 on every reclaim. */
  fencingToken: number;
  /** 1 + the number of earlier owners. */
  attempt: number;
  /** Whether this acquire took over a FAIL or expired RUNNING row. */
  reclaimed: boolean;
  /** The lease and heartbeat this owner runs with, after defaults. */
  leaseMs: number;
  heartbeatMs: number;
  /**
   * Until when this node provably holds the lease, on `performance.now()`'s clock: the instant the
   * acquire was sent, plus leaseMs, minus a safety margin (a tenth of the lease, at most 1 s). No
   * other node can take the run over before it. `keepAlive` moves it forward with each heartbeat.
   */
  heldUntil: number;
}

/**
 * A hand-acquired lease kept alive with runExclusive's own loop: heartbeats with retries, the
 * local deadline, and a signal. From `JobSchedulerService.keepAlive(lock)`.
 */
export interface JobLeaseHold {
  /** Aborts with LostJobLeaseError when the lease is lost or its deadline passes unrenewed. */
  readonly signal: AbortSignal;
  /** Until when the lease is provably held, on `performance.now()`'s clock. */
  readonly heldUntil: number;
  /** Stops heartbeats and marks the run SUCCESS, retrying transient failures until the deadline; false if lost. */
  complete(data?: unknown): Promise<boolean>;
  /** Stops heartbeats and marks the run FAIL (immediately reclaimable), with the same retries; false if lost. */
  fail(data?: unknown): Promise<boolean>;
  /** fail with `{ released: true }` by default. */
  release(data?: unknown): Promise<boolean>;
  /** Stops heartbeats without finalizing: the lease then runs out by itself. */
  stop(): Promise<void>;
}

export type JobAcquireResult =
  | ({ acquired: true } & JobAcquiredLease)
  | {
      acquired: false;
      id?: never;
      ownerToken?: never;
      idempotencyKey?: never;
      fencingToken?: never;
    };

/** What runExclusive hands its callback. */
export interface JobExecutionLease extends JobLease {
  idempotencyKey: string;
  fencingToken: number;
  attempt: number;
  /**
   * Aborts with LostJobLeaseError when the lease is lost or its local deadline passes before a
   * heartbeat renews it, and with JobShutdownError when the application shuts down.
   */
  signal: AbortSignal;
}

export interface RunExclusiveResult<T> {
  acquired: boolean;
  result?: T;
}
