import { JobSchedulerStatus, JobSchedulerType } from '../../job-scheduler/job-scheduler.entity';
import type { JobSchedulerService } from '../../job-scheduler/job-scheduler.service';
import type { ResolvedScheduledRetention, RetentionPass } from './scheduled-retention';
import type { SchedulerLogger, SchedulerTimers } from '../scheduler-ports';

/** The lease code under which the scheduler's retention runs (once per period across instances). */
export const SCHEDULED_RETENTION_CODE = 'scheduling.retention';

/**
 * Prunes the declared jobs' finished occurrences at each epoch-aligned period: the instance that
 * takes that period's lease prunes, the others skip. Only SCHEDULE rows of declared jobs' codes:
 * hand-acquired runs and INITIAL rows are never touched.
 */
export class ScheduledRetentionTimer {
  private cancel?: () => void;

  constructor(
    private readonly jobs: Pick<JobSchedulerService, 'runExclusive' | 'prune'>,
    private readonly timers: SchedulerTimers,
    private readonly retention: ResolvedScheduledRetention,
    private readonly passes: () => RetentionPass[],
    private readonly logger: SchedulerLogger,
    /** The lease code of the periods, which must differ for each user of this timer. */
    private readonly code: string = SCHEDULED_RETENTION_CODE,
  ) {}

  start(): void {
    this.arm();
  }

  stop(): void {
    this.cancel?.();
    this.cancel = undefined;
  }

  /** Prunes for the period containing now (or `period`); the rows deleted, or null when another instance has it. */
  async runOnce(period = Math.floor(this.timers.now() / this.retention.everyMs) * this.retention.everyMs): Promise<number | null> {
    const outcome = await this.jobs.runExclusive({ code: this.code, runKey: new Date(period).toISOString(), leaseMs: 10 * 60_000 }, async () => {
      let deleted = 0;
      // Retention's own period rows go too, or they would pile up one an hour.
      const own: RetentionPass[] = [
        { status: JobSchedulerStatus.SUCCESS, olderThanMs: this.retention.successMs, codes: [this.code] },
        { status: JobSchedulerStatus.FAIL, olderThanMs: this.retention.failMs, codes: [this.code] },
      ];
      for (const pass of [...this.passes(), ...own]) {
        deleted += await this.jobs.prune({
          olderThan: pass.olderThanMs,
          status: pass.status,
          type: JobSchedulerType.SCHEDULE,
          code: pass.codes,
          dutyCycle: this.retention.dutyCycle,
        });
      }
      return deleted;
    });
    return outcome.acquired ? (outcome.result as number) : null;
  }

  private arm(): void {
    const next = (Math.floor(this.timers.now() / this.retention.everyMs) + 1) * this.retention.everyMs;
    this.cancel = this.timers.at(next, () => {
      const pruning = this.runOnce(next).then(
        (deleted) => {
          if (deleted !== null && deleted > 0) this.logger.log(`Pruned ${deleted} finished occurrence(s) (${this.code})`);
        },
        (error: unknown) => this.logger.warn(`Retention of declared jobs' occurrences failed: ${String(error)}`),
      );
      this.timers.observe?.(pruning);
      this.arm();
    });
  }
}
