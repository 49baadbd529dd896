import { randomUuid } from '../../job-scheduler/random-uuid';
import { JobLeaseDatabaseError, JobShutdownError, LostJobLeaseError } from '../../job-scheduler/job-scheduler.errors';
import { describeFailure } from '../../job-scheduler/lease-arguments';
import type { HoldClock } from '../../job-scheduler/run/lease-hold';
import { createSpanRunner } from '../../job-scheduler/telemetry/lease-telemetry';
import { withJobExecution } from './job-execution-context';
import { RunExecution } from './run-execution';
import { whenSettled } from './when-settled';
import type { AheadClaim, ClaimOutcome, HeldClaim } from './held-claim';
import { type ClaimOptions, OccurrenceClaims } from './occurrence-claims';
import { type ActiveJobRun, RunRegistry } from './run-registry';
import { runKeyOf } from './occurrence-keys';
import type { JobDeclaration } from '../schedule/job-declaration';
import { holdClockOf, type SchedulerLease, type SchedulerLogger, type SchedulerTimers } from '../scheduler-ports';
import { JobTimeoutError } from '../scheduling.errors';
import type { JobExecution, JobRunRecord } from '../scheduling.types';

export type JobHandler = (execution: JobExecution) => Promise<void> | void;

export interface OccurrenceRequest {
  job: JobDeclaration;
  handler: JobHandler;
  scheduledAt: number;
  trigger: JobExecution['trigger'];
  tenantId?: string;
  /** The lease asked for ahead of the due instant: its outcome decides the run, no acquire at start. */
  ahead?: AheadClaim;
  /** A lease already claimed and held for this run (a tenant of a batch): run it instead of acquiring one. */
  claim?: HeldClaim;
  /**
   * Asked once the lease is proven held, right before the handler starts: a function to call when
   * the handler settles (the job runs here from now), or null when this instance must not start it
   * now (it runs the job's previous occurrence and the job skips overlaps): the claim is then handed
   * over to the fleet, never ended unrun. Default: start.
   */
  enter?: () => Promise<(() => void) | null> | (() => void) | null;
  /**
   * Called once the handler has settled (returned, thrown or timed out) with how long it ran,
   * before its lease is finalized: a caller bounding how many handlers run at once has a free
   * slot from then.
   */
  onSettled?: (ranMs: number) => void;
}

type Settlement = { kind: 'returned' } | { kind: 'threw'; error: unknown } | { kind: 'timed-out' };

const ignore = (): void => undefined;

/**
 * How long after a claim whose answer was lost it is sent again: the pool drops the connections
 * the fault broke meanwhile (sent at once, the retry went out on one of them and failed too).
 */
export const CLAIM_AGAIN_AFTER_MS = 250;

/**
 * Whether a failed claim is worth sending again under its owner tokens: a failure that can be
 * transient (a dropped connection, a timeout: JobLeaseDatabaseError.retryable), after which its
 * statement may have committed. Not an error no retry fixes (a permission, an invalid run).
 */
export const mayClaimAgain = (error: unknown): boolean => error instanceof JobLeaseDatabaseError && error.retryable;

/** Why a run that did not return failed: its timeout, shutdown, a lost lease, or its own error. */
const failureCode = (settlement: Settlement, error: unknown, recorded: boolean): string => {
  if (settlement.kind === 'timed-out') return 'JOB_TIMEOUT';
  if (error instanceof JobShutdownError) return 'JOB_SHUTDOWN';
  if (!recorded || error instanceof LostJobLeaseError) return 'JOB_LEASE_LOST';
  return 'JOB_FAILED';
};

/** A run's span attributes (built only when a tracer is registered). */
const spanAttributesOf = (execution: JobExecution): Record<string, string> => {
  const named: Record<string, string> = {
    'job.name': execution.name,
    'job.scheduled_at': execution.scheduledAt.toISOString(),
    'job.idempotency_key': execution.idempotencyKey,
    'job.trigger': execution.trigger,
  };
  if (execution.tenantId !== undefined) named['job.tenant_id'] = execution.tenantId;
  if (execution.schedule) named['job.schedule_id'] = execution.schedule.id;
  return named;
};

/**
 * Runs one occurrence (for one tenant) under its lease: claim (a FAIL row is final: no retry),
 * hold from the claim, a fenced proof right before the handler starts, timeout, and finalization
 * retried within the lease. A claim that will not start here is handed over to the fleet, never
 * ended unrun. Never throws: every end is a JobRunRecord.
 */
export class OccurrenceRunner {
  private readonly runs: RunRegistry;
  /** The claim side (claim, hand-over, end), shared with the parts that claim without running at once. */
  readonly claims: OccurrenceClaims;
  /** Set by the scheduler's stop() (see close()): a lease won from now on is handed over (given back for runNow) unrun. */
  closed = false;
  /** Pauses before a claim is sent again (see pause): close() ends them. */
  private readonly pauses = new Set<() => void>();
  private readonly span = createSpanRunner();
  constructor(
    private readonly lease: SchedulerLease,
    private readonly timers: SchedulerTimers,
    private readonly logger: SchedulerLogger,
  ) {
    this.runs = new RunRegistry(lease, timers, logger);
    this.claims = new OccurrenceClaims(lease, timers, logger, this.runs);
  }

  async run(request: OccurrenceRequest): Promise<JobRunRecord> {
    const { job, scheduledAt, tenantId, ahead } = request;
    const correlationId = request.claim?.correlationId ?? ahead?.correlationId ?? randomUuid();
    const schedule = job.dynamicSchedule;
    const base: JobRunRecord = { name: job.name, outcome: 'failed', scheduledAt: new Date(scheduledAt), trigger: request.trigger, tenantId, correlationId };
    if (schedule) base.scheduleId = schedule.id;

    let claim = request.claim;
    if (!claim) {
      // A claim at the instant names an owner token of its own too, where the lease can claim
      // again (below); a claim ahead named one when it was sent.
      const ownerToken = ahead ? ahead.ownerToken : this.lease.acquireAgain ? randomUuid() : undefined;
      // Shutdown waits for acquires in flight: one that wins after stop() is handed over.
      let outcome = await (ahead?.outcome ?? this.claimNow(request, correlationId, { ownerToken }));
      // A claim ahead the database did not answer is claimed again now, as it would be without
      // claims ahead: the database may be back by the instant. It names the same owner token: if
      // the claim ahead committed unseen (its answer lost, or its statement run after this
      // instance gave up on it), this claim gets that run back instead of losing to its row.
      // A claim at the instant whose answer was lost is sent again so too, CLAIM_AGAIN_AFTER_MS
      // later, once, for a failure that can be transient: before, such a run waited RUNNING under
      // a token nobody held until the take-over ran it a lease late.
      // Not once the stop began: it waits only for the claims already in flight.
      if (outcome.kind === 'unavailable' && ahead && !this.closed) {
        this.claims.aheadFailed(outcome.error);
        outcome = await this.claimNow(request, correlationId, { reclaimFailed: ahead.reclaimFailed, ownerToken: ahead.ownerToken, again: true });
      } else if (outcome.kind === 'unavailable' && ownerToken !== undefined && !this.closed && mayClaimAgain(outcome.error)) {
        await this.pause(CLAIM_AGAIN_AFTER_MS);
        if (!this.closed) outcome = await this.claimNow(request, correlationId, { ownerToken, again: true });
      }
      if (outcome.kind === 'unavailable') return { ...base, errorCode: 'JOB_LEASE_UNAVAILABLE', error: outcome.error };
      if (outcome.kind === 'lost') return { ...base, outcome: 'skipped-locked' };
      claim = outcome.claim;
    }
    // Not proven by its deadline (most runs are: no wait before the handler): one fenced heartbeat decides.
    if (!this.closed && !claim.hold.proven) {
      const unproven = await this.prove(claim, base);
      if (unproven) return unproven;
    }
    // Shutdown began (before the proof, or while its heartbeat was out): given back, not started.
    if (this.closed) return this.giveBack(claim, request, base);
    const entering = request.enter ? request.enter() : ignore;
    let leave: (() => void) | null;
    if (entering === null || typeof entering === 'function') leave = entering;
    else {
      leave = await entering;
      // Its turn came after the stop began: given back, not started.
      if (leave && this.closed) {
        leave();
        return this.giveBack(claim, request, base);
      }
    }
    if (leave === null) {
      await this.claims.handOver([claim]);
      return { ...base, outcome: 'skipped-overlap' };
    }
    return this.execute(request, claim, base, leave);
  }

  /**
   * A run from its start: the handler under the proven lease, then its finalization. Not async,
   * and run() returns into it: while thousands of handlers run together, none keeps run()'s frame
   * alive (an async function's suspended frame was the largest part of a running handler's memory).
   */
  private execute(request: OccurrenceRequest, claim: HeldClaim, base: JobRunRecord, leave: () => void): Promise<JobRunRecord> {
    const { job, scheduledAt, tenantId } = request;
    const schedule = job.dynamicSchedule;
    claim.start();
    const { hold, lock } = claim;
    // A claim that reclaimed an expired row (a holder that vanished, a hand-over) runs it again: a take-over, whoever claimed it.
    const trigger: JobExecution['trigger'] = lock.reclaimed && request.trigger !== 'run-now' ? 'take-over' : request.trigger;
    const started = { ...base, trigger };
    const startedAt = this.timers.now();
    const execution = new RunExecution(
      {
        name: job.name,
        scheduledAt: new Date(scheduledAt),
        startedAt: new Date(startedAt),
        tenantId: tenantId ?? schedule?.tenantId,
        idempotencyKey: lock.idempotencyKey,
        fencingToken: lock.fencingToken,
        correlationId: base.correlationId as string,
        trigger,
      },
      hold,
      schedule,
    );
    const active: ActiveJobRun = { name: job.name, lease: claim.lease, hold, done: false };
    this.runs.started(active);
    started.startedAt = execution.startedAt;

    // Proven again in the very turn the handler starts: a process frozen after the proof (a SIGSTOP,
    // a long pause while runs due together start one after another) does not start it on a lease
    // that ran out meanwhile (another owner may run it by now).
    let frozen = false;
    // The handler's run time, on the holder's monotonic clock: recorded with the run (data.handlerMs),
    // so that its start reads as finishedAt - handlerMs on the database's clock.
    const clock = this.clock;
    let handlerStart = clock.now();
    const work = Promise.resolve().then(() => {
      if (!hold.proven) {
        frozen = true;
        return;
      }
      handlerStart = clock.now();
      // Each run in its own scope: code below run() reads it with currentJobExecution().
      return this.span(
        'scheduled_job.run',
        () => spanAttributesOf(execution),
        () => withJobExecution(execution, () => request.handler(execution)),
      );
    });
    return this.settle(work, job).then(async (settlement) => {
      const handlerMs = Math.max(0, Math.round(clock.now() - handlerStart));
      leave();
      request.onSettled?.(this.timers.now() - startedAt);
      if (frozen) {
        // Never started. Its lease has run out here: like a stalled holder's, it is left to the
        // take-over scan (no statement: under overload thousands of these would each need one).
        await hold.stop();
        this.runs.settled(active);
        return { ...base, outcome: 'skipped-locked' };
      }
      const record = await this.finalize(job, claim, settlement, started, handlerMs);
      // A run that timed out goes on behind (nothing stops a promise); its lease is already failed.
      const behind = work.then(ignore, (error: unknown) => {
        if (settlement.kind === 'timed-out') this.logger.warn(`${job.name} failed after its timeout: ${String(error)}`);
      });
      void whenSettled(behind, () => this.runs.settled(active));
      return record;
    });
  }

  /** The holder's clock: monotonic on system timers, the manual clock in tests. */
  get clock(): HoldClock {
    return holdClockOf(this.timers);
  }

  /** The scheduler's stop() began: no claim is sent again from now on, and the pauses before one end now. */
  close(): void {
    this.closed = true;
    for (const wake of [...this.pauses]) wake();
  }

  /** Waits `ms` on the holder's clock (keeping the process alive: it is awaited), or until close(). */
  pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let cancel: () => void = ignore;
      const wake = (): void => {
        this.pauses.delete(wake);
        cancel();
        resolve();
      };
      this.pauses.add(wake);
      cancel = this.clock.after(ms, wake, true);
    });
  }

  /** Aborts every run, waits up to the grace, then gives back the leases still held (see RunRegistry). */
  shutdown(graceMs: number): Promise<void> {
    return this.runs.shutdown(graceMs);
  }

  /**
   * Claims the occurrence of a request that has no claim ahead, now. (A claim ahead named its key
   * when it was sent: at 100,000 runs due together, naming it again took 2% of the CPU.)
   */
  private claimNow({ job, scheduledAt, tenantId, trigger }: OccurrenceRequest, correlationId: string, how?: ClaimOptions): Promise<ClaimOutcome> {
    const runKey = runKeyOf({ scheduleId: job.dynamicSchedule?.id }, scheduledAt, tenantId, trigger === 'run-now' ? { correlationId } : undefined);
    return this.claims.claim(job, runKey, correlationId, how);
  }

  /**
   * Proves a claim its deadline no longer proves (see HeldClaim.prove): null when it is held, else
   * why it must not start, as a record (another owner has it, or its lease runs out and the
   * take-over decides). Shutdown waits for the proof as for a claim in flight.
   */
  private async prove(claim: HeldClaim, base: JobRunRecord): Promise<JobRunRecord | null> {
    const proving = claim.prove();
    this.runs.claiming(proving.catch(ignore));
    const proof = await proving;
    if (proof.kind === 'held') return null;
    await claim.hold.stop();
    if (proof.kind === 'lost') return { ...base, outcome: 'skipped-locked' };
    return { ...base, outcome: 'failed', errorCode: 'JOB_LEASE_UNAVAILABLE', error: proof.error };
  }

  /** Shutdown began: a claim won is handed over (a runNow's given back), not started. */
  private async giveBack(claim: HeldClaim, request: OccurrenceRequest, base: JobRunRecord): Promise<JobRunRecord> {
    const error = new JobShutdownError(claim.lease.id);
    await this.runs.givenBack(request.trigger === 'run-now' ? this.claims.end([claim], { released: true, reason: 'shutdown' }) : this.claims.handOver([claim]));
    return { ...base, outcome: 'failed', errorCode: 'JOB_SHUTDOWN', error };
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

  /**
   * complete or fail through the hold: retried within the lease (a retry counts "already done by
   * this owner"). Either records the handler's run time (`handlerMs`: from right before it started
   * to its settlement, its timeout for one that timed out) in the row's data, beside a failure's error.
   */
  private async finalize(
    job: JobDeclaration,
    { hold, lease }: HeldClaim,
    settlement: Settlement,
    started: JobRunRecord,
    handlerMs: number,
  ): Promise<JobRunRecord> {
    const finish = (record: Partial<JobRunRecord>): JobRunRecord => {
      const finishedAt = this.timers.now();
      return { ...started, ...record, finishedAt: new Date(finishedAt), durationMs: finishedAt - (started.startedAt as Date).getTime() };
    };
    try {
      if (settlement.kind === 'returned') {
        return (await hold.complete({ handlerMs }))
          ? finish({ outcome: 'succeeded' })
          : finish({ outcome: 'failed', errorCode: 'JOB_LEASE_LOST', error: new LostJobLeaseError(lease.id) });
      }
      const error = settlement.kind === 'threw' ? settlement.error : new JobTimeoutError(job.name, job.timeoutMs as number);
      if (settlement.kind === 'timed-out') hold.abort(error);
      const recorded = await hold.fail({ ...describeFailure(error), handlerMs });
      return finish({ outcome: 'failed', errorCode: failureCode(settlement, error, recorded), error });
    } catch (error) {
      return finish({ outcome: 'failed', errorCode: 'JOB_LEASE_UNAVAILABLE', error });
    }
  }
}
