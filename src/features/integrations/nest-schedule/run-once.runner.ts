import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { JobSchedulerType } from '../../job-scheduler/job-scheduler.entity';
import type { JobSchedulerService } from '../../job-scheduler/job-scheduler.service';
import type { JobAcquiredLease, JobExecutionLease } from '../../job-scheduler/job-scheduler.types';
import { DEFAULT_FAILURE_LOG_INTERVAL_MS, FailureLog, type LogLine } from '../../scheduling/failure-log';
import { withJobExecution } from '../../scheduling/job-execution-context';
import { occurrenceRunKey } from '../../scheduling/occurrence-keys';
import type { JobExecution } from '../../scheduling/scheduling.types';
import type { RunOnceErrorPolicy } from './run-once.types';
import { occurrenceOfTick, type TickSchedule } from './tick-occurrence';

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
const signatureOf = (kind: string, error: unknown): string =>
  `${kind} ${error instanceof Error ? `${error.name} ${error.message}` : String(error)}`;

/**
 * Runs the ticks of @RunOnce methods: names the tick by its due instant, takes its lease with
 * runExclusive (heartbeats, local deadline, fencing, outcomes and metrics as runExclusive's) and
 * runs the method in the tick's JobExecution scope. Losers skip. A failed tick is over: its FAIL
 * row is not taken over by a later instance (the next tick is the retry), as for declared jobs.
 */
export class RunOnceRunner {
  private readonly logger = new Logger('RunOnce');
  private readonly failures = new FailureLog(DEFAULT_FAILURE_LOG_INTERVAL_MS, () => Date.now());

  constructor(private readonly jobs: JobSchedulerService) {}

  async run(plan: RunOncePlan, instance: object, method: (...args: unknown[]) => unknown, args: unknown[]): Promise<unknown> {
    const firedAt = Date.now();
    const scheduledAt = occurrenceOfTick(plan.ticks, firedAt);
    if (scheduledAt === null) {
      this.logger.warn(`${plan.code} (${plan.method}) fired at ${new Date(firedAt).toISOString()}, when no instant of its ${plan.ticks.description} is due: skipped`);
      return undefined;
    }
    return this.runTick(plan, instance, method, args, scheduledAt, 'schedule');
  }

  /**
   * Runs a tick whose holder stopped heartbeating (or handed it over) again, here, under the lease
   * the take-over scan claimed for it: same idempotency key, a greater fencing token. Its errors
   * are logged: no @nestjs/schedule timer waits for it.
   */
  async takeOver(plan: RunOncePlan, instance: object, method: (...args: unknown[]) => unknown, scheduledAt: number, lock: JobAcquiredLease): Promise<void> {
    await this.runTick({ ...plan, errors: 'log' }, instance, method, [], scheduledAt, 'take-over', lock);
  }

  private async runTick(
    plan: RunOncePlan,
    instance: object,
    method: (...args: unknown[]) => unknown,
    args: unknown[],
    scheduledAt: number,
    trigger: 'schedule' | 'take-over',
    /** The lease the take-over claimed: run under it rather than acquire. */
    claimed?: JobAcquiredLease,
  ): Promise<unknown> {
    const runKey = occurrenceRunKey(scheduledAt);
    let started = false;
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
          correlationId: randomUUID(),
          trigger,
        };
        return withJobExecution(execution, () => method.apply(instance, args));
      };
      const outcome = claimed
        ? { acquired: true as const, result: await this.jobs.runAcquired(claimed, tick) }
        : await this.jobs.runExclusive(
            {
              code: plan.code,
              name: plan.method,
              type: JobSchedulerType.SCHEDULE,
              runKey,
              ...(plan.leaseMs === undefined ? {} : { leaseMs: plan.leaseMs }),
              ...(plan.heartbeatMs === undefined ? {} : { heartbeatMs: plan.heartbeatMs }),
              reclaimFailed: false,
            },
            tick,
          );
      if (!outcome.acquired) {
        this.logger.debug(`${plan.code} ${runKey}: another instance runs or ran it, skipped`);
        return undefined;
      }
      this.write(this.failures.succeeded(plan.code));
      return outcome.result;
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
