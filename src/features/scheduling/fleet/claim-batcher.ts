import { JobLeaseDatabaseError } from '../../job-scheduler/job-scheduler.errors';
import type { JobAcquireManyOptions, JobAcquireManyRun, JobAcquireResult } from '../../job-scheduler/job-scheduler.types';
import { fromRandomOffset, shuffled } from './random-walk';
import type { SchedulerLease } from '../scheduler-ports';

/**
 * The runs of one turn are split into statements of CLAIM_BATCH_MIN to `maxBatch` runs, up to
 * `parallel` of them in flight. At the due instant, 8 at once: a claim sent later would wait in the
 * pool behind the completes of the runs the first claims started; at most 8, so that a default
 * pool of 10 keeps connections for heartbeats.
 */
export const CLAIM_BATCH_MIN = 25;

/**
 * How a turn's claims are sent: statements at once, runs per statement at most, and over how long
 * the statements are spread (0: as fast as they go).
 */
export interface ClaimShape {
  parallel: number;
  maxBatch: number;
  spreadMs: number;
  /** Spread claims: about this many statements per turn (each of CLAIM_BATCH_MIN to maxBatch runs). */
  statements?: number;
}

/** Claims at the due instant: all at once, from a random offset, so that runs start as soon as possible. */
export const CLAIMS_AT_THE_INSTANT: ClaimShape = { parallel: 8, maxBatch: 1_000, spreadMs: 0 };

/**
 * Claims ahead of the instant (claimAheadMs): there is time. Each instance takes the occurrences
 * in a random order of its own, in about 40 statements (25 to 1,000 runs each), spread evenly over the first half
 * of the time ahead. Every instance then claims a random part at the same pace, so each gets about
 * its share (sent at once, the first instance to send claimed nearly all of them), statements stay
 * short (no long waits on each other's uncommitted rows), and the second half is the margin.
 */
export const claimsAhead = (claimAheadMs: number): ClaimShape => ({ parallel: 2, maxBatch: 1_000, spreadMs: Math.floor(claimAheadMs / 2), statements: 40 });

/** How many runs each claim statement of a turn with `runs` runs takes. */
export const claimBatchSize = (runs: number, shape: ClaimShape = CLAIMS_AT_THE_INSTANT): number =>
  shape.statements === undefined
    ? Math.min(shape.maxBatch, Math.max(CLAIM_BATCH_MIN, Math.ceil(runs / shape.parallel)))
    : Math.min(shape.maxBatch, Math.max(CLAIM_BATCH_MIN, Math.ceil(runs / shape.statements)));

interface PendingClaim {
  options: JobAcquireManyRun;
  /** A retry of a claim whose answer was lost (acquireMany's `{ again }`): sent in statements of its own. */
  again: boolean;
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
 * One acquire alone in its turn is sent as it is (through acquireMany when it names its owner
 * token: acquire draws its own). A claim the database refuses fails every run of
 * its statement (each records JOB_LEASE_UNAVAILABLE, as an acquire would); any other error (an
 * invalid run) sends that statement's runs one by one, so only the invalid one fails.
 */
export class ClaimBatcher {
  private pending: PendingClaim[] = [];

  constructor(
    private readonly lease: SchedulerLease & Required<Pick<SchedulerLease, 'acquireMany'>>,
    private readonly random: () => number,
    /** The shape of each turn's claims (a function: read at each turn). */
    private readonly shape: ClaimShape | (() => ClaimShape) = CLAIMS_AT_THE_INSTANT,
    /** Resolves after `ms` (the scheduler's timers): paces spread claims. */
    private readonly wait: (ms: number) => Promise<void> = async () => undefined,
    /** The clock `wait` measures on (ms). */
    private readonly now: () => number = () => performance.now(),
    /**
     * Claims announced (acquireMany `{ announce }`): claims ahead, sent by instances one after the
     * other, so that those after the winner do not send theirs.
     */
    private readonly announce = false,
  ) {}

  /** acquireMany's options for claims sent again or not. */
  private optionsFor(again: boolean): JobAcquireManyOptions | undefined {
    if (again) return { again: true };
    return this.announce ? { announce: true } : undefined;
  }

  /** `again`: a retry of a claim whose answer was lost, under the owner token it named (see acquireMany). */
  acquire(options: JobAcquireManyRun, again = false): Promise<JobAcquireResult> {
    return new Promise((resolve, reject) => {
      if (this.pending.push({ options, again, resolve, reject }) === 1) setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const claims = this.pending;
    this.pending = [];
    if (claims.length === 1) {
      const [claim] = claims;
      return this.alone(claim).then(claim.resolve, claim.reject);
    }
    const shape = typeof this.shape === 'function' ? this.shape() : this.shape;
    const { spreadMs } = shape;
    const walk = spreadMs > 0 ? shuffled(claims, this.random) : fromRandomOffset(claims, this.random);
    const size = claimBatchSize(walk.length, shape);
    // Claims again in statements of their own, sent by the same `parallel` senders as the rest.
    const statements: PendingClaim[][] = [];
    for (const kind of [walk.filter((claim) => !claim.again), walk.filter((claim) => claim.again)]) {
      for (let index = 0; index < kind.length; index += size) statements.push(kind.slice(index, index + size));
    }
    // Spread: statement i goes no earlier than i × (spreadMs / statements) after the first.
    const pace = spreadMs > 0 ? spreadMs / statements.length : 0;
    const startedAt = this.now();
    let sent = 0;
    const next = async (): Promise<void> => {
      for (let batch = statements.shift(); batch; batch = statements.shift()) {
        const notBefore = startedAt + sent++ * pace;
        const early = notBefore - this.now();
        if (early > 1) await this.wait(early);
        await this.claim(batch);
      }
    };
    await Promise.all(Array.from({ length: Math.min(shape.parallel, statements.length) }, next));
  }

  private async claim(batch: readonly PendingClaim[]): Promise<void> {
    let results: JobAcquireResult[];
    try {
      results = await this.lease.acquireMany(
        batch.map((claim) => claim.options),
        this.optionsFor(batch[0].again),
      );
    } catch (error) {
      if (error instanceof JobLeaseDatabaseError) {
        for (const claim of batch) claim.reject(error);
        return;
      }
      await Promise.all(batch.map((claim) => this.alone(claim).then(claim.resolve, claim.reject)));
      return;
    }
    batch.forEach((claim, index) => claim.resolve(results[index]));
  }

  /** One run in a statement of its own. */
  private async alone({ options, again }: PendingClaim): Promise<JobAcquireResult> {
    if (!again && options.ownerToken === undefined && !this.announce) return this.lease.acquire(options);
    const [result] = await this.lease.acquireMany([options], this.optionsFor(again));
    return result;
  }
}

/** The lease with acquires batched per turn of the event loop, when it can claim several runs at once. */
export const withClaimBatching = (
  lease: SchedulerLease,
  random: () => number,
  ahead?: { shape: ClaimShape | (() => ClaimShape); wait: (ms: number) => Promise<void>; now?: () => number },
): SchedulerLease => {
  const port = bound(lease);
  const { acquireMany } = port;
  if (!acquireMany) return lease;
  const batched = { ...port, acquireMany };
  // Claims at the instant, and claims again (retries of claims ahead whose answer was lost): the
  // same senders, so that together they leave the pool connections for heartbeats and completes.
  const atTheInstant = new ClaimBatcher(batched, random);
  // Claims ahead of the instant go through a batcher of their own, spread (see claimsAhead).
  const spread = ahead && new ClaimBatcher(batched, random, ahead.shape, ahead.wait, ahead.now, true);
  return {
    ...port,
    acquire: (options) => atTheInstant.acquire(options),
    acquireAgain: (options) => atTheInstant.acquire(options, true),
    ...(spread ? { acquireAhead: (options: JobAcquireManyRun) => spread.acquire(options) } : {}),
  };
};

/** The port's methods bound to their lease (a class instance's methods live on its prototype). */
export const bound = (lease: SchedulerLease): SchedulerLease => ({
  acquire: lease.acquire.bind(lease),
  acquireBatch: lease.acquireBatch.bind(lease),
  acquireMany: lease.acquireMany?.bind(lease),
  acquireAhead: lease.acquireAhead?.bind(lease),
  acquireAgain: lease.acquireAgain?.bind(lease),
  failMany: lease.failMany?.bind(lease),
  completeMany: lease.completeMany?.bind(lease),
  expireMany: lease.expireMany?.bind(lease),
  heartbeat: lease.heartbeat.bind(lease),
  heartbeatMany: lease.heartbeatMany?.bind(lease),
  complete: lease.complete.bind(lease),
  fail: lease.fail.bind(lease),
});
