import type { JobSchedulerStatus, JobSchedulerType } from '../job-scheduler.entity';

/** One logical run as an operator sees it. The owner token is never exposed. */
export interface JobRunView {
  id: string;
  /** The v2 lock key, which is also the run's idempotency key. */
  idempotencyKey: string;
  code: string;
  name: string | null;
  type: JobSchedulerType;
  status: JobSchedulerStatus;
  /** Null for INITIAL runs and for rows written by 1.1. */
  runKey: string | null;
  attempts: number;
  fencingToken: number;
  /** The current (or last) owner's node identity. */
  ownerId: string | null;
  leaseMs: number | null;
  createdAt: Date;
  /** The last owner write: acquire, heartbeat or finalization (database clock). */
  modifiedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  data: unknown;
  lastError: unknown;
  /** Milliseconds since modifiedAt, by the database clock. */
  heartbeatAgeMs: number;
}

/** A RUNNING run whose holder has not written for longer than its lease: dead, or stuck. */
export interface ExpiredJobLease extends JobRunView {
  /** How far past its lease the run is, in ms. */
  overdueMs: number;
}

export interface JobRunFilter {
  code?: string;
  status?: JobSchedulerStatus;
  type?: JobSchedulerType;
  /** Runs whose runKey starts with this text (needs `code`: one range of the (code, runKey) index). */
  runKeyPrefix?: string;
  /** createdAt >= from */
  from?: Date;
  /** createdAt < to */
  to?: Date;
  /** 1–1,000; default 100. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface JobRunPage {
  runs: JobRunView[];
  /** Present when more runs may follow: pass it as `cursor`. */
  nextCursor?: string;
}

export interface JobPruneOptions {
  /** Finished longer ago than this (ms, or text like '30d'), by the database clock. */
  olderThan: number | string;
  /** Which finished statuses to delete; default both SUCCESS and FAIL. RUNNING is never deleted. */
  status?: JobSchedulerStatus | readonly JobSchedulerStatus[];
  type?: JobSchedulerType;
  /** Only runs of this code, or of these codes (at most 10,000); default every code. */
  code?: string | readonly string[];
  /** Stop after deleting this many rows; default: no limit. */
  limit?: number;
  /** The most rows per statement; default 1,000. */
  batchSize?: number;
  /**
   * The share of the pass spent in prune statements, from 0.01 to 1; default 0.5. After each full
   * batch, prune rests the batch's own duration × (1 − dutyCycle) ÷ dutyCycle before the next (at
   * 0.5, as long as the batch took), so batches slowed by a busy database are followed by longer
   * rests and leave the acquires beside them room. 1: batches of batchSize back to back.
   */
  dutyCycle?: number;
  /**
   * Also delete INITIAL SUCCESS rows. Deleting one makes its run-once job run again: only for a
   * code you mean to re-run.
   */
  dangerouslyDeleteRunOnceSuccess?: boolean;
}
