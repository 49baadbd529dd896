import { type BeforeApplicationShutdown, Inject, Injectable, type OnApplicationBootstrap, Optional } from '@nestjs/common';
import { LibraryLogger } from '../log-text';
import { parseInterval } from '../duration';
import { JobSchedulerStatus } from '../job-scheduler.entity';
import { moduleErrors } from '../job-scheduler.errors';
import { JOB_SCHEDULER_MODULE_OPTIONS } from '../job-scheduler.module-definition';
import type { JobSchedulerRuntimeOptions } from '../job-scheduler.options';
import { JobRunsInspector } from './job-runs.inspector';
import { JobSchedulerService } from '../job-scheduler.service';
import { systemTimers } from '../system-timers';
import { PRUNE_DUTY_CYCLE_RULE, pruneDutyCycleOf } from './prune-pacing';

/** The lease code under which retention runs (once per period across all nodes). */
export const RETENTION_JOB_CODE = 'job-scheduler.retention';

/**
 * Above this many rows (the planner's estimate) and without `retention`, the module warns once
 * at boot that finished runs are kept forever.
 */
export const RETENTION_WARNING_ROWS = 500_000;

const duration = (value: unknown, field: string): number | undefined => {
  if (value === undefined) return undefined;
  const ms = parseInterval(value);
  if (ms === null) throw moduleErrors.retention(field, value);
  return ms;
};

/**
 * Prunes the lease table on a schedule when `retention` is configured: at each epoch-aligned
 * period, the node that takes that period's lease prunes; the others skip.
 */
@Injectable()
export class JobRetention implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new LibraryLogger('JobRetention');
  private readonly success?: number;
  private readonly fail?: number;
  private readonly everyMs: number;
  private readonly dutyCycle: number;
  private cancel?: () => void;

  constructor(
    private readonly jobs: JobSchedulerService,
    private readonly inspector: JobRunsInspector,
    @Optional() @Inject(JOB_SCHEDULER_MODULE_OPTIONS) options: JobSchedulerRuntimeOptions = {},
  ) {
    const retention = options.retention ?? {};
    this.success = duration(retention.success, 'success');
    this.fail = duration(retention.fail, 'fail');
    this.everyMs = duration(retention.every, 'every') ?? 3_600_000;
    const dutyCycle = pruneDutyCycleOf(retention.dutyCycle);
    if (dutyCycle === null) throw moduleErrors.retentionDutyCycle(PRUNE_DUTY_CYCLE_RULE, retention.dutyCycle);
    this.dutyCycle = dutyCycle;
  }

  private get enabled(): boolean {
    return this.success !== undefined || this.fail !== undefined;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.enabled) this.arm();
    else await this.warnIfUnbounded();
  }

  /**
   * Without retention the table grows forever: say so once when it is already large. The rows of
   * declared jobs are pruned by SchedulingModule by default; these are the rest.
   */
  private async warnIfUnbounded(): Promise<void> {
    let rows: number | null;
    try {
      rows = await this.inspector.estimateRowCount();
    } catch {
      return; // the database's state is reported elsewhere (health, the first statement)
    }
    if (rows === null || rows <= RETENTION_WARNING_ROWS) return;
    this.logger.warn(
      `The job-scheduler table holds about ${rows} rows and JobSchedulerModule has no retention: finished runs are kept forever. ` +
        `Set retention: { success: '30d', fail: '90d' } (see README, "Pruning").`,
    );
  }

  beforeApplicationShutdown(): void {
    this.cancel?.();
    this.cancel = undefined;
  }

  /** Prunes now (the period's lease decides which node does). Returns the rows deleted, or null if another node has this period. */
  async runOnce(period = Math.floor(systemTimers.now() / this.everyMs) * this.everyMs): Promise<number | null> {
    const outcome = await this.jobs.runExclusive({ code: RETENTION_JOB_CODE, runKey: new Date(period).toISOString(), leaseMs: 10 * 60_000 }, async () => {
      let deleted = 0;
      const dutyCycle = this.dutyCycle;
      if (this.success !== undefined) deleted += await this.jobs.prune({ olderThan: this.success, status: JobSchedulerStatus.SUCCESS, dutyCycle });
      if (this.fail !== undefined) deleted += await this.jobs.prune({ olderThan: this.fail, status: JobSchedulerStatus.FAIL, dutyCycle });
      return deleted;
    });
    return outcome.acquired ? (outcome.result as number) : null;
  }

  private arm(): void {
    const next = (Math.floor(systemTimers.now() / this.everyMs) + 1) * this.everyMs;
    this.cancel = systemTimers.at(next, () => {
      this.runOnce(next).then(
        (deleted) => deleted !== null && deleted > 0 && this.logger.log(`Pruned ${deleted} finished job run(s)`),
        (error: unknown) => this.logger.error(`Retention failed: ${String(error)}`),
      );
      this.arm();
    });
  }
}
