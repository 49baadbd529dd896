import type { Logger } from '@nestjs/common';
import { callbackErrors, JobShutdownError, LostJobLeaseError } from '../job-scheduler.errors';
import type {
  JobAcquireOptions,
  JobAcquireResult,
  JobAcquiredLease,
  JobExecutionLease,
  JobLease,
  JobLeaseHold,
  JobRunAcquiredOptions,
  RunExclusiveResult,
} from '../job-scheduler.types';
import { checkAcquiredLease, checkRunAcquiredOptions, describeFailure } from '../lease-arguments';
import { type HoldStatements, LeaseHold } from './lease-hold';
import { monotonicNow } from './lease-deadline';

/**
 * What the run machinery needs of the lease: its single-statement operations (JobSchedulerService
 * provides them, each through its own public method, so that a run acquires and releases exactly
 * as a caller of acquire and release does).
 */
export interface LeaseOperations {
  acquire(options: JobAcquireOptions): Promise<JobAcquireResult>;
  release(lease: JobLease, data: unknown): Promise<boolean>;
  /** The fenced heartbeat and complete / fail a hold of `lease` sends. */
  holdStatements(lease: JobLease): HoldStatements;
  /** The bound on one lease statement. */
  readonly statementTimeoutMs: number;
  /** Counts a run that found its lease taken over as it finalized. */
  lost(): void;
}

export interface LeaseRunsSettings {
  /** On shutdown: how long to wait for aborted callbacks before releasing their leases. */
  shutdownGraceMs: number;
  /** The lease service's logger: retries, shutdown and failed releases are logged under its name. */
  logger: Pick<Logger, 'debug' | 'warn' | 'error'>;
}

interface ActiveRun {
  lease: JobLease;
  hold: LeaseHold;
  /** Settles (never rejects) once the run has finished, whatever its outcome. */
  settled: Promise<void>;
  done: boolean;
}

const ignore = (): void => undefined;

/** Attaches `cause` to an error that has none, so a secondary failure is not lost. */
const attachCause = (error: unknown, cause: unknown): void => {
  if (typeof error === 'object' && error !== null && !Object.prototype.hasOwnProperty.call(error, 'cause')) {
    Object.defineProperty(error, 'cause', { value: cause, configurable: true, writable: true });
  }
};

/**
 * The lease's run machinery: runExclusive and runAcquired run a callback under a held lease
 * (heartbeats, the local deadline, SUCCESS or FAIL, the signal), keepAlive holds a hand-acquired
 * lease, and shutdown stops and finalizes every run still going. Owner tokens are never logged.
 */
export class LeaseRuns {
  private readonly logger: LeaseRunsSettings['logger'];
  private readonly shutdownGraceMs: number;
  private readonly active = new Set<ActiveRun>();
  /** runExclusive calls whose acquire is in flight: shutdown waits for them (a run they win is then one of `active`). */
  private readonly acquiring = new Set<Promise<unknown>>();
  /** Shutdown began: a run acquired from now on is told to stop (its signal aborts) as it starts. */
  private closing = false;

  constructor(
    private readonly lease: LeaseOperations,
    settings: LeaseRunsSettings,
  ) {
    this.logger = settings.logger;
    this.shutdownGraceMs = settings.shutdownGraceMs;
  }

  /** JobSchedulerService.keepAlive: a started hold of a hand-acquired lease. */
  keepAlive(lock: JobAcquiredLease): JobLeaseHold {
    const checked = checkAcquiredLease(lock);
    return this.hold(checked, checked);
  }

  /** JobSchedulerService.runExclusive: acquire, then run `fn` under the lease. */
  async runExclusive<T>(options: JobAcquireOptions, fn: (lease: JobExecutionLease) => Promise<T>): Promise<RunExclusiveResult<T>> {
    if (typeof fn !== 'function') throw callbackErrors.notAFunction(fn);
    const acquiring = this.lease.acquire(options);
    this.acquiring.add(acquiring);
    void acquiring.finally(() => this.acquiring.delete(acquiring)).catch(ignore);
    const lock = await acquiring;
    if (!lock.acquired) return { acquired: false };
    return { acquired: true, result: await this.runHeld(lock, fn) };
  }

  /** JobSchedulerService.runAcquired: run `fn` under a lease this node already acquired. */
  async runAcquired<T>(lock: JobAcquiredLease, fn: (lease: JobExecutionLease) => Promise<T>, options?: JobRunAcquiredOptions): Promise<T> {
    if (typeof fn !== 'function') throw callbackErrors.notAFunction(fn);
    const recordHandlerMs = checkRunAcquiredOptions(options);
    const checked = checkAcquiredLease(lock);
    return this.runHeld({ ...lock, ...checked }, fn, recordHandlerMs);
  }

  /**
   * On application shutdown: aborts every running callback's signal, waits up to the grace for
   * them to settle, then releases the leases still held (fenced: another node's lease is safe).
   */
  async shutdown(): Promise<void> {
    this.closing = true;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.shutdownGraceMs);
    });
    // Acquires in flight first (a cron tick that fired as shutdown began): a run they win is
    // finalized before the DataSource closes, in a later shutdown hook, like the others.
    await Promise.race([Promise.allSettled([...this.acquiring]), grace]);
    const running = [...this.active];
    if (running.length === 0) {
      clearTimeout(timer);
      return;
    }
    for (const run of running) run.hold.abort(new JobShutdownError(run.lease.id));
    await Promise.race([Promise.all(running.map((run) => run.settled)), grace]);
    clearTimeout(timer);
    const stuck = running.filter((run) => !run.done);
    await Promise.all(
      stuck.map(async (run) => {
        try {
          await run.hold.stop();
          await this.lease.release(run.lease, { released: true, reason: 'shutdown' });
        } catch (error) {
          this.logger.error(`Could not release job lease ${run.lease.id} on shutdown: ${String(error)}`);
        }
      }),
    );
    if (stuck.length > 0) this.logger.warn(`Released ${stuck.length} job lease(s) still running after the shutdown grace`);
  }

  private runHeld<T>(lock: JobAcquiredLease, fn: (lease: JobExecutionLease) => Promise<T>, recordHandlerMs = false): Promise<T> {
    const lease: JobLease = { id: lock.id, ownerToken: lock.ownerToken };
    const hold = this.hold(lock, lease);
    const run: ActiveRun = { lease, hold, settled: Promise.resolve(), done: false };
    const outcome = this.finishRun(lock, lease, hold, fn, recordHandlerMs).finally(() => {
      run.done = true;
      this.active.delete(run);
    });
    run.settled = outcome.then(ignore, ignore);
    this.active.add(run);
    // Won while shutting down: it runs (the lease is this node's), told to stop at once, and shutdown waits for it.
    if (this.closing) hold.abort(new JobShutdownError(lease.id));
    return outcome;
  }

  /** A started LeaseHold on `lock`, its statements those of the lease (its executor and telemetry). */
  private hold(lock: Pick<JobAcquiredLease, 'leaseMs' | 'heartbeatMs' | 'heldUntil'>, lease: JobLease): LeaseHold {
    const { id } = lease;
    return new LeaseHold(
      {
        leaseId: id,
        leaseMs: lock.leaseMs,
        heartbeatMs: lock.heartbeatMs,
        heldUntil: lock.heldUntil,
        statementTimeoutMs: this.lease.statementTimeoutMs,
        onRetry: (operation, error, attempt) => {
          const message = `Retrying ${operation} of job lease ${id} (attempt ${attempt + 1}): ${error instanceof Error ? error.message : String(error)}`;
          if (attempt === 1) this.logger.warn(message);
          else this.logger.debug(message);
        },
      },
      this.lease.holdStatements(lease),
    ).start();
  }

  /**
   * Runs the callback and finalizes. Whenever finalization finds the lease taken over, the signal
   * is aborted with the LostJobLeaseError thrown (unless it already was), so that whatever still
   * listens to it (work the callback left running, cleanup hooks) learns of the loss too.
   */
  private async finishRun<T>(
    lock: { idempotencyKey: string; fencingToken: number; attempt: number },
    lease: JobLease,
    hold: LeaseHold,
    fn: (lease: JobExecutionLease) => Promise<T>,
    recordHandlerMs: boolean,
  ): Promise<T> {
    if (hold.signal.aborted) {
      // The acquire answered after the deadline it proved: the run may be taken over any moment.
      await this.lease.release(lease, { released: true, reason: 'acquired past its local deadline' }).catch((error: unknown) => {
        this.logger.warn(`Could not release job lease ${lease.id} acquired past its deadline: ${String(error)}`);
      });
      throw hold.signal.reason;
    }
    let result: T;
    const startedAt = monotonicNow();
    // The callback's run time, when asked to record it (runAcquired's recordHandlerMs).
    const handlerMs = (): { handlerMs: number } | undefined => (recordHandlerMs ? { handlerMs: Math.round(monotonicNow() - startedAt) } : undefined);
    try {
      result = await fn({
        id: lease.id,
        ownerToken: lease.ownerToken,
        idempotencyKey: lock.idempotencyKey,
        fencingToken: lock.fencingToken,
        attempt: lock.attempt,
        signal: hold.signal,
      });
    } catch (error) {
      throw (await this.recordFailure(lease, hold, error, handlerMs())).thrown;
    }
    const lostBeforeCompleting = () => new LostJobLeaseError(lease.id, { reason: 'another owner took the run over before it completed' });
    if (!(await hold.finalize('complete', handlerMs(), lostBeforeCompleting))) {
      this.lease.lost();
      const reason: unknown = hold.signal.reason;
      throw reason instanceof LostJobLeaseError ? reason : lostBeforeCompleting();
    }
    return result;
  }

  /**
   * Records FAIL for a callback error and returns what runExclusive must throw, wrapped: an async
   * function that returned a thrown thenable would have it adopted instead of rethrown.
   */
  private async recordFailure(lease: JobLease, hold: LeaseHold, error: unknown, handlerMs?: { handlerMs: number }): Promise<{ thrown: unknown }> {
    const lostBeforeFailing = () =>
      error instanceof LostJobLeaseError
        ? error
        : new LostJobLeaseError(lease.id, { cause: error, reason: 'another owner took the run over before it failed' });
    let recorded: boolean;
    try {
      recorded = await hold.finalize('fail', { ...describeFailure(error), ...handlerMs }, lostBeforeFailing);
    } catch (recordError) {
      this.logger.error(`Could not record FAIL for job lease ${lease.id}: ${String(recordError)}`);
      attachCause(error, recordError);
      return { thrown: error };
    }
    if (recorded) return { thrown: error };
    this.lease.lost();
    const reason: unknown = hold.signal.reason;
    return { thrown: error instanceof LostJobLeaseError ? error : reason instanceof LostJobLeaseError ? reason : lostBeforeFailing() };
  }
}
