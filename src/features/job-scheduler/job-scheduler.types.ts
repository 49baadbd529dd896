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

/** The fencing capability: whoever holds both may heartbeat and finalize the run. */
export interface JobLease {
  id: string;
  ownerToken: string;
}

/** What a winner knows about the run it owns. */
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
  /** Aborts when the lease is lost, a heartbeat cannot prove it, or the application shuts down. */
  signal: AbortSignal;
}

export interface RunExclusiveResult<T> {
  acquired: boolean;
  result?: T;
}
