import { JobLeaseDatabaseError } from '../job-scheduler/job-scheduler.errors';
import type { JobAcquireOptions, JobAcquireResult } from '../job-scheduler/job-scheduler.types';
import { fromRandomOffset } from './random-walk';
import type { SchedulerLease } from './scheduler-ports';

/**
 * The runs of one turn are split into up to PARALLEL_CLAIMS statements sent at once, each of
 * CLAIM_BATCH_MIN to CLAIM_BATCH_MAX runs. At once, because a claim sent later would wait in the
 * pool behind the completes of the runs the first claims started; at most 8, so that a default
 * pool of 10 keeps connections for heartbeats.
 */
const PARALLEL_CLAIMS = 8;
export const CLAIM_BATCH_MIN = 25;
const CLAIM_BATCH_MAX = 1_000;

/** How many runs each claim statement of a turn with `runs` runs takes. */
export const claimBatchSize = (runs: number): number => Math.min(CLAIM_BATCH_MAX, Math.max(CLAIM_BATCH_MIN, Math.ceil(runs / PARALLEL_CLAIMS)));

interface PendingClaim {
  options: JobAcquireOptions;
  resolve(result: JobAcquireResult): void;
  reject(error: unknown): void;
}

/**
 * Acquires asked in the same turn of the event loop go to the database together: the timers of
 * the jobs due at one instant fire in one turn, and their leases are claimed by a few statements
 * (`acquireMany`, see claimBatchSize) instead of one each. Every instance walks the
 * runs from a random offset, so instances racing for the same instant claim different runs first
 * and the work spreads; a run another instance took is lost without a write, as with acquire.
 *
 * One acquire alone in its turn is sent as it is. A claim the database refuses fails every run of
 * its statement (each records JOB_LEASE_UNAVAILABLE, as an acquire would); any other error (an
 * invalid run) sends that statement's runs one by one, so only the invalid one fails.
 */
export class ClaimBatcher {
  private pending: PendingClaim[] = [];

  constructor(
    private readonly lease: SchedulerLease & Required<Pick<SchedulerLease, 'acquireMany'>>,
    private readonly random: () => number,
  ) {}

  acquire(options: JobAcquireOptions): Promise<JobAcquireResult> {
    return new Promise((resolve, reject) => {
      if (this.pending.push({ options, resolve, reject }) === 1) setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const claims = this.pending;
    this.pending = [];
    if (claims.length === 1) {
      const [claim] = claims;
      return this.lease.acquire(claim.options).then(claim.resolve, claim.reject);
    }
    const walk = fromRandomOffset(claims, this.random);
    const size = claimBatchSize(walk.length);
    const statements: PendingClaim[][] = [];
    for (let index = 0; index < walk.length; index += size) statements.push(walk.slice(index, index + size));
    const next = async (): Promise<void> => {
      for (let batch = statements.shift(); batch; batch = statements.shift()) await this.claim(batch);
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_CLAIMS, statements.length) }, next));
  }

  private async claim(batch: readonly PendingClaim[]): Promise<void> {
    let results: JobAcquireResult[];
    try {
      results = await this.lease.acquireMany(batch.map((claim) => claim.options));
    } catch (error) {
      if (error instanceof JobLeaseDatabaseError) {
        for (const claim of batch) claim.reject(error);
        return;
      }
      await Promise.all(batch.map((claim) => this.lease.acquire(claim.options).then(claim.resolve, claim.reject)));
      return;
    }
    batch.forEach((claim, index) => claim.resolve(results[index]));
  }
}

/** The lease with acquires batched per turn of the event loop, when it can claim several runs at once. */
export const withClaimBatching = (lease: SchedulerLease, random: () => number): SchedulerLease => {
  const port = bound(lease);
  const { acquireMany } = port;
  if (!acquireMany) return lease;
  const batcher = new ClaimBatcher({ ...port, acquireMany }, random);
  return { ...port, acquire: (options) => batcher.acquire(options) };
};

/** The port's methods bound to their lease (a class instance's methods live on its prototype). */
const bound = (lease: SchedulerLease): SchedulerLease => ({
  acquire: lease.acquire.bind(lease),
  acquireBatch: lease.acquireBatch.bind(lease),
  acquireMany: lease.acquireMany?.bind(lease),
  heartbeat: lease.heartbeat.bind(lease),
  complete: lease.complete.bind(lease),
  fail: lease.fail.bind(lease),
});
