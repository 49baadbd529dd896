import { randomUuid } from '../../job-scheduler/random-uuid';
import { LibraryLogger } from '../../job-scheduler/log-text';
import { JobSchedulerType } from '../../job-scheduler/job-scheduler.entity';
import type { JobSchedulerService } from '../../job-scheduler/job-scheduler.service';
import type { JobAcquiredLease, JobExecutionLease } from '../../job-scheduler/job-scheduler.types';
import { DEFAULT_FAILURE_LOG_INTERVAL_MS, FailureLog, type LogLine } from '../../scheduling/records/failure-log';
import { withJobExecution } from '../../scheduling/occurrence/job-execution-context';
import { occurrenceRunKey } from '../../scheduling/occurrence/occurrence-keys';
import type { JobExecution } from '../../scheduling/scheduling.types';
import type { RunOnceErrorPolicy } from './run-once.types';
import { occurrenceOfTick, type TickSchedule } from './tick-occurrence';

/** One tick to run: the method, the due instant it is named by, and the lease a take-over claimed for it (run under it rather than acquire). */
interface Tick {
  plan: RunOncePlan;
  instance: object;
  method: (...args: unknown[]) => unknown;
  args: unknown[];
  scheduledAt: number;
  trigger: 'schedule' | 'take-over';
  claimed?: JobAcquiredLease;
}

/** One @RunOnce method, resolved at boot. */
export interface RunOncePlan {
  /** The lease code: the @RunOnce name. */
  code: string;
  /** `ClassName.methodName`, the lease's label. */
  method: string;
  ticks: TickSchedule;
  leaseMs?: number;
  heartbeatMs?: number;
  errors: RunOnceErrorPolicy;
  abandoned: 'take-over' | 'drop';
  maxAttempts: number;
}

const messageOf = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));
const signatureOf = (kind: string, error: unknown): string => `${kind} ${error instanceof Error ? `${error.name} ${error.message}` : String(error)}`;

/**
 * Runs the ticks of @RunOnce methods: names the tick by its due instant, takes its lease with
 * runExclusive (heartbeats, local deadline, fencing, outcomes and metrics as runExclusive's) and
 * runs the method in the tick's JobExecution scope. Losers skip. A failed tick is over: its FAIL
 * row is not taken over by a later instance (the next tick is the retry), as for declared jobs.
 */
export class RunOnceRunner {
  private readonly logger = new LibraryLogger('RunOnce');
  private readonly failures = new FailureLog(DEFAULT_FAILURE_LOG_INTERVAL_MS, () => Date.now());
  /** Ticks taking their lease or running: shutdown waits for them, so that each is finalized before the DataSource closes. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly jobs: JobSchedulerService) {}

  /**
   * Shutdown began: a tick that fires from now on is not run (it takes no lease: another
   * instance's tick runs it), and the ticks in flight are waited for, up to `graceMs`, so that
   * their leases are finalized while the database is still there (before the DataSource closes,
   * in a later shutdown hook). Their signals abort with the lease service's own shutdown.
   */
  async close(graceMs: number): Promise<void> {
    this.closed = true;
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.allSettled([...this.inFlight]), grace]);
    clearTimeout(timer);
  }

  async run(plan: RunOncePlan, instance: object, method: (...args: unknown[]) => unknown, args: unknown[]): Promise<unknown> {
    const firedAt = Date.now();
    const scheduledAt = occurrenceOfTick(plan.ticks, firedAt);
    if (scheduledAt === null) {
      this.logger.warn(
        `${plan.code} (${plan.method}) fired at ${new Date(firedAt).toISOString()}, when no instant of its ${plan.ticks.description} is due: skipped`,
      );
      return undefined;
    }
    return this.runTick({ plan, instance, method, args, scheduledAt, trigger: 'schedule' });
  }

  /**
   * Runs a tick whose holder stopped heartbeating (or handed it over) again, here, under the lease
   * the take-over scan claimed for it: same idempotency key, a greater fencing token. Its errors
   * are logged: no @nestjs/schedule timer waits for it.
   */
  async takeOver(plan: RunOncePlan, instance: object, method: (...args: unknown[]) => unknown, scheduledAt: number, lock: JobAcquiredLease): Promise<void> {
    await this.runTick({ plan: { ...plan, errors: 'log' }, instance, method, args: [], scheduledAt, trigger: 'take-over', claimed: lock });
  }

  private runTick(tick: Tick): Promise<unknown> {
    const { plan, scheduledAt, claimed } = tick;
    if (this.closed && !claimed) {
      this.logger.debug(`${plan.code} ${new Date(scheduledAt).toISOString()}: shutting down, not run here`);
      return Promise.resolve(undefined);
    }
    const running = this.takeAndRun(tick);
    this.inFlight.add(running);
    void running.finally(() => this.inFlight.delete(running)).catch(() => undefined);
    return running;
  }

  private async takeAndRun({ plan, instance, method, args, scheduledAt, trigger, claimed }: Tick): Promise<unknown> {
    const runKey = occurrenceRunKey(scheduledAt);
    let started = false;
    let runTrigger = trigger;
    try {
      const tick = async (lease: JobExecutionLease) => {
        started = true;
        const execution: JobExecution = {
          name: plan.code,
          scheduledAt: new Date(scheduledAt),
          startedAt: new Date(),
          signal: lease.signal,
          idempotencyKey: lease.idempotencyKey,
          fencingToken: lease.fencingToken,
          correlationId: randomUuid(),
          trigger: runTrigger,
        };
        return withJobExecution(execution, () => method.apply(instance, args));
      };
      let lock = claimed;
      if (!lock) {
        const taken = await this.jobs.acquire({
          code: plan.code,
          name: plan.method,
          type: JobSchedulerType.SCHEDULE,
          runKey,
          ...(plan.leaseMs === undefined ? {} : { leaseMs: plan.leaseMs }),
          ...(plan.heartbeatMs === undefined ? {} : { heartbeatMs: plan.heartbeatMs }),
          reclaimFailed: false,
        });
        if (!taken.acquired) {
          this.logger.debug(`${plan.code} ${runKey}: another instance runs or ran it, skipped`);
          return undefined;
        }
        lock = taken;
      }
      if (this.closed) {
        // Won after shutdown began: handed over to the fleet (left RUNNING with its lease run out,
        // marked), so that another instance's take-over scan runs it; never run here unfinalizable.
        await this.jobs.expireMany([lock]);
        this.logger.log(`${plan.code} ${runKey}: won while shutting down, handed over to another instance's take-over`);
        return undefined;
      }
      // A tick that reclaimed an expired row (its holder vanished or stalled past its lease) runs it again: a take-over.
      if (lock.reclaimed) runTrigger = 'take-over';
      // Its handler's run time in the row (data.handlerMs): the dashboard shows when the method started.
      const result = await this.jobs.runAcquired(lock, tick, { recordHandlerMs: true });
      this.write(this.failures.succeeded(plan.code));
      return result;
    } catch (error) {
      if (!started) {
        // The lease could not be taken (the database is unreachable, say): skipped here, never
        // run without it, which would be on every instance.
        this.write(
          this.failures.failed(plan.code, signatureOf('lease', error), `${plan.code} ${runKey}: could not take the lease, skipped: ${messageOf(error)}`),
        );
        return undefined;
      }
      if (plan.errors === 'rethrow') throw error;
      this.write(
        this.failures.failed(
          plan.code,
          signatureOf('run', error),
          `${plan.code} ${runKey} failed: ${messageOf(error)}`,
          error instanceof Error ? error.stack : undefined,
        ),
      );
      return undefined;
    }
  }

  private write(lines: LogLine[]): void {
    for (const line of lines) {
      if (line.level === 'error') this.logger.error(line.message, line.stack);
      else this.logger.log(line.message);
    }
  }
}
