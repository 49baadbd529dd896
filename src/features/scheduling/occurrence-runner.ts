import { randomUUID } from 'node:crypto';
import { JobShutdownError, LostJobLeaseError } from '../job-scheduler/job-scheduler.errors';
import type { JobAcquiredLease, JobLease } from '../job-scheduler/job-scheduler.types';
import { describeFailure } from '../job-scheduler/lease-arguments';
import { DEFAULT_STATEMENT_TIMEOUT_MS, provenUntil } from '../job-scheduler/lease-deadline';
import { type HoldClock, LeaseHold } from '../job-scheduler/lease-hold';
import { createSpanRunner } from '../job-scheduler/lease-telemetry';
import { withJobExecution } from './job-execution-context';
import { runKeyOf } from './occurrence-keys';
import type { JobDeclaration } from './schedule/job-declaration';
import type { SchedulerLease, SchedulerLogger, SchedulerTimers } from './scheduler-ports';
import { JobTimeoutError } from './scheduling.errors';
import type { JobExecution, JobRunRecord } from './scheduling.types';

export type JobHandler = (execution: JobExecution) => Promise<void> | void;

/** One run the runner still owns, for shutdown. */
export interface ActiveJobRun {
  name: string;
  lease: JobLease;
  hold: LeaseHold;
  settled: Promise<void>;
  done: boolean;
}

export interface OccurrenceRequest {
  job: JobDeclaration;
  handler: JobHandler;
  scheduledAt: number;
  trigger: JobExecution['trigger'];
  tenantId?: string;
  /** The lease asked for ahead of the due instant: its outcome decides the run, no acquire at start. */
  ahead?: AheadClaim;
  /** A lease already claimed for this run (a tenant of a batch): run it instead of acquiring one. */
  claim?: OccurrenceClaim;
  /**
   * Called once the handler has settled (returned, thrown or timed out) with how long it ran,
   * before its lease is finalized: a caller bounding how many handlers run at once has a free
   * slot from then.
   */
  onSettled?: (ranMs: number) => void;
}

/** An occurrence's lease asked for ahead of its due instant (claimAheadMs), and what came of it. */
export interface AheadClaim {
  scheduledAt: number;
  correlationId: string;
  /** When the claim was sent, on the runner's clock: the lease runs from then. */
  sentAt: number;
  outcome: Promise<ClaimOutcome>;
  /** The outcome once it is known. */
  settled?: ClaimOutcome;
}

type ClaimOutcome = { kind: 'acquired'; lock: JobAcquiredLease } | { kind: 'lost' } | { kind: 'unavailable'; error: unknown };

/** A run's lease taken ahead of the run, and the instant (on the runner's clock) it was proven. */
export interface OccurrenceClaim {
  lock: JobAcquiredLease;
  sentAt: number;
  correlationId: string;
}

type Settlement = { kind: 'returned' } | { kind: 'threw'; error: unknown } | { kind: 'timed-out' };

const ignore = (): void => undefined;

/** Why a run that did not return failed: its timeout, shutdown, a lost lease, or its own error. */
const failureCode = (settlement: Settlement, error: unknown, recorded: boolean): string => {
  if (settlement.kind === 'timed-out') return 'JOB_TIMEOUT';
  if (error instanceof JobShutdownError) return 'JOB_SHUTDOWN';
  if (!recorded || error instanceof LostJobLeaseError) return 'JOB_LEASE_LOST';
  return 'JOB_FAILED';
};

/**
 * Runs one occurrence (for one tenant) under the lease: acquire (a FAIL row is final: no retry),
 * heartbeat, timeout, finalization. Never throws: every end is a JobRunRecord.
 */
export class OccurrenceRunner {
  readonly active = new Set<ActiveJobRun>();
  private readonly acquiring = new Set<Promise<unknown>>();
  /** Set by the scheduler's stop(): a lease acquired from now on is given back unrun. */
  closed = false;
  private readonly span = createSpanRunner();

  constructor(
    private readonly lease: SchedulerLease,
    private readonly timers: SchedulerTimers,
    private readonly logger: SchedulerLogger,
  ) {}

  async run(request: OccurrenceRequest): Promise<JobRunRecord> {
    const { job, scheduledAt, trigger, tenantId, claim, ahead } = request;
    const correlationId = claim?.correlationId ?? ahead?.correlationId ?? randomUUID();
    const schedule = job.dynamicSchedule;
    const base: JobRunRecord = { name: job.name, outcome: 'failed', scheduledAt: new Date(scheduledAt), trigger, tenantId, correlationId };
    if (schedule) base.scheduleId = schedule.id;

    const clock = this.clock;
    let sentAt = clock.now();
    let lock;
    if (claim) {
      ({ lock, sentAt } = claim);
    } else {
      // Shutdown waits for acquires in flight: one that wins after stop() gives its lease back.
      if (ahead) sentAt = ahead.sentAt;
      const acquiring = ahead?.outcome ?? this.acquireOutcome(job, runKeyOf({ scheduleId: schedule?.id }, scheduledAt, tenantId, trigger === 'run-now' ? { correlationId } : undefined));
      const taken = await this.admitTaken(await acquiring, base);
      if ('record' in taken) return taken.record;
      lock = taken.lock;
    }

    const lease: JobLease = { id: lock.id, ownerToken: lock.ownerToken };
    const startedAt = this.timers.now();
    // Heartbeats with retries and the local deadline; finalization stays below (one attempt).
    const hold = new LeaseHold(
      {
        leaseId: lease.id,
        leaseMs: lock.leaseMs,
        heartbeatMs: lock.heartbeatMs,
        heldUntil: provenUntil(sentAt, lock.leaseMs),
        statementTimeoutMs: DEFAULT_STATEMENT_TIMEOUT_MS,
        clock,
      },
      {
        heartbeat: (timeoutMs) => this.lease.heartbeat(lease, { timeoutMs }),
        finalize: (outcome, data) => (outcome === 'complete' ? this.lease.complete(lease, data) : this.lease.fail(lease, data)),
      },
    );
    const execution: JobExecution = {
      name: job.name,
      scheduledAt: new Date(scheduledAt),
      startedAt: new Date(startedAt),
      // Read when the handler asks for it (see LeaseHold.signal).
      get signal() {
        return hold.signal;
      },
      tenantId: tenantId ?? schedule?.tenantId,
      idempotencyKey: lock.idempotencyKey,
      fencingToken: lock.fencingToken,
      correlationId,
      trigger,
      ...(schedule ? { schedule } : {}),
    };
    let finished: () => void = ignore;
    const active: ActiveJobRun = { name: job.name, lease, hold, settled: new Promise((resolve) => (finished = resolve)), done: false };
    this.active.add(active);
    const started = { ...base, startedAt: execution.startedAt };
    hold.start();

    // Each run in its own scope: code below run() reads it with currentJobExecution().
    const attributes: Record<string, string> = {
      'job.name': job.name,
      'job.scheduled_at': execution.scheduledAt.toISOString(),
      'job.idempotency_key': execution.idempotencyKey,
      'job.trigger': trigger,
      ...(execution.tenantId === undefined ? {} : { 'job.tenant_id': execution.tenantId }),
      ...(schedule ? { 'job.schedule_id': schedule.id } : {}),
    };
    const work = Promise.resolve().then(() =>
      this.span('scheduled_job.run', attributes, async () => withJobExecution(execution, () => request.handler(execution))),
    );
    const settlement = await this.settle(work, job);
    request.onSettled?.(this.timers.now() - startedAt);
    await hold.stop();
    const record = await this.finalize(job, lease, hold, settlement, started);
    // A run that timed out goes on behind (nothing stops a promise); its lease is already failed.
    work.then(ignore, (error: unknown) => {
      if (settlement.kind === 'timed-out') this.logger.warn(`${job.name} failed after its timeout: ${String(error)}`);
    }).finally(() => {
      this.forget(active);
      finished();
    });
    return record;
  }

  /** The holder's clock: monotonic on system timers, the manual clock in tests. */
  get clock(): HoldClock {
    return (
      this.timers.holdClock ?? {
        now: () => this.timers.now(),
        after: (delayMs, fn) => this.timers.at(this.timers.now() + delayMs, fn),
      }
    );
  }

  /** Aborts every run, waits up to the grace, then gives back the leases still held. */
  async shutdown(graceMs: number): Promise<void> {
    await Promise.allSettled([...this.acquiring]);
    const running = [...this.active];
    for (const run of running) run.hold.abort(new JobShutdownError(run.lease.id));
    let cancel: () => void = ignore;
    const grace = new Promise<void>((resolve) => {
      cancel = this.timers.at(this.timers.now() + graceMs, resolve);
    });
    await Promise.race([Promise.all(running.map((run) => run.settled)), grace]);
    cancel();
    await Promise.all(
      running
        .filter((run) => !run.done)
        .map((run) =>
          this.lease.fail(run.lease, { released: true, reason: 'shutdown' }).catch((error: unknown) => {
            this.logger.error(`Could not release the lease of ${run.name} on shutdown: ${String(error)}`);
          }),
        ),
    );
  }

  /**
   * Asks for the occurrence's lease now, ahead of its due instant (the claims of many occurrences
   * go out together, off the path of their start): `run({ ahead })` at the due instant uses it.
   */
  claimAhead(job: JobDeclaration, scheduledAt: number): AheadClaim {
    const runKey = runKeyOf({ scheduleId: job.dynamicSchedule?.id }, scheduledAt);
    const claim: AheadClaim = { scheduledAt, correlationId: randomUUID(), sentAt: this.clock.now(), outcome: this.acquireOutcome(job, runKey, true) };
    void claim.outcome.then((outcome) => (claim.settled = outcome));
    return claim;
  }

  /**
   * Gives back leases claimed ahead that will not run (FAIL `{ released: true, reason }`), in few
   * statements when the lease can (a shutdown may give back thousands): for each, whether this
   * instance held it.
   */
  releaseAhead(claims: readonly AheadClaim[], reason: string): Promise<boolean[]> {
    const data = { released: true, reason };
    return this.endAhead(
      claims,
      (locks) => (this.lease.failMany ? this.lease.failMany(locks, data) : Promise.all(locks.map((lock) => this.lease.fail(lock, data)))),
      (count) => `Could not give back ${count} lease(s) claimed ahead (${reason})`,
    );
  }

  /**
   * On shutdown: hands leases claimed ahead (runs not started) over to the other instances, left
   * RUNNING with their lease run out (`expireMany`), so that a take-over scan elsewhere runs them.
   * Whether this instance held each; null when the lease cannot (then give them back instead).
   */
  async handOverAhead(claims: readonly AheadClaim[]): Promise<boolean[] | null> {
    const { expireMany } = this.lease;
    if (!expireMany) return null;
    // On failure their leases run out on their own: taken over all the same, one lease later.
    return this.endAhead(
      claims,
      (locks) => expireMany.call(this.lease, locks),
      (count) => `Could not hand over ${count} lease(s) claimed ahead on shutdown; they are taken over once their lease runs out`,
    );
  }

  /** Waits for these claims, ends the leases won with `end` (a failure is logged), and tells which were won. */
  private async endAhead(claims: readonly AheadClaim[], end: (locks: JobAcquiredLease[]) => Promise<unknown>, failure: (count: number) => string): Promise<boolean[]> {
    const outcomes = await Promise.all(claims.map((claim) => claim.outcome));
    const locks = outcomes.flatMap((outcome) => (outcome.kind === 'acquired' ? [outcome.lock] : []));
    if (locks.length > 0) {
      try {
        await end(locks);
      } catch (error) {
        this.logger.warn(`${failure(locks.length)}: ${String(error)}`);
      }
    }
    return outcomes.map((outcome) => outcome.kind === 'acquired');
  }

  /** The occurrence's acquire (one of a batch), as a value: shutdown waits for those in flight. */
  private acquireOutcome(job: JobDeclaration, runKey: string, ahead = false): Promise<ClaimOutcome> {
    const options = { code: job.name, runKey, name: job.name, leaseMs: job.leaseMs, reclaimFailed: false };
    const acquiring = ahead && this.lease.acquireAhead ? this.lease.acquireAhead(options) : this.lease.acquire(options);
    const outcome = acquiring.then(
      (lock): ClaimOutcome => (lock.acquired ? { kind: 'acquired', lock } : { kind: 'lost' }),
      // The lock store cannot be reached: failed, rather than run on every instance.
      (error: unknown): ClaimOutcome => ({ kind: 'unavailable', error }),
    );
    this.acquiring.add(outcome);
    void outcome.finally(() => this.acquiring.delete(outcome));
    return outcome;
  }

  /**
   * The lease to run under, or the record of why there is none: unreachable store, another
   * instance has it, or it was won after stop() (then released unrun: nothing starts after stop).
   */
  private async admitTaken(outcome: ClaimOutcome, base: JobRunRecord): Promise<{ record: JobRunRecord } | { lock: JobAcquiredLease }> {
    if (outcome.kind === 'unavailable') return { record: { ...base, outcome: 'failed', errorCode: 'JOB_LEASE_UNAVAILABLE', error: outcome.error } };
    if (outcome.kind === 'lost') return { record: { ...base, outcome: 'skipped-locked' } };
    if (!this.closed) return { lock: outcome.lock };
    const error = new JobShutdownError(outcome.lock.id);
    try {
      await this.lease.fail(outcome.lock, { released: true, reason: 'shutdown' });
    } catch (releaseError) {
      this.logger.warn(`Could not release the lease of ${base.name} acquired during shutdown: ${String(releaseError)}`);
    }
    return { record: { ...base, outcome: 'failed', errorCode: 'JOB_SHUTDOWN', error } };
  }

  private forget(active: ActiveJobRun): void {
    active.done = true;
    this.active.delete(active);
  }

  private settle(work: Promise<void>, job: JobDeclaration): Promise<Settlement> {
    const settled = work.then(
      (): Settlement => ({ kind: 'returned' }),
      (error: unknown): Settlement => ({ kind: 'threw', error }),
    );
    if (job.timeoutMs === undefined) return settled;
    let cancel: () => void = ignore;
    const timeout = new Promise<Settlement>((resolve) => {
      cancel = this.timers.at(this.timers.now() + (job.timeoutMs as number), () => resolve({ kind: 'timed-out' }));
    });
    return Promise.race([settled, timeout]).finally(cancel);
  }

  private async finalize(
    job: JobDeclaration,
    lease: JobLease,
    hold: LeaseHold,
    settlement: Settlement,
    started: JobRunRecord,
  ): Promise<JobRunRecord> {
    const finish = (record: Partial<JobRunRecord>): JobRunRecord => {
      const finishedAt = this.timers.now();
      return { ...started, ...record, finishedAt: new Date(finishedAt), durationMs: finishedAt - (started.startedAt as Date).getTime() };
    };
    try {
      if (settlement.kind === 'returned') {
        return (await this.lease.complete(lease))
          ? finish({ outcome: 'succeeded' })
          : finish({ outcome: 'failed', errorCode: 'JOB_LEASE_LOST', error: new LostJobLeaseError(lease.id) });
      }
      const error = settlement.kind === 'threw' ? settlement.error : new JobTimeoutError(job.name, job.timeoutMs as number);
      if (settlement.kind === 'timed-out') hold.abort(error);
      const recorded = await this.lease.fail(lease, describeFailure(error));
      return finish({ outcome: 'failed', errorCode: failureCode(settlement, error, recorded), error });
    } catch (error) {
      return finish({ outcome: 'failed', errorCode: 'JOB_LEASE_UNAVAILABLE', error });
    }
  }
}
