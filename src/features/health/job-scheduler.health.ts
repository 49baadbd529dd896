import { Injectable, Optional } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { ScheduledJobsService } from '../scheduling/scheduled-jobs.service';
import { JobRunsInspector } from './job-runs.inspector';

export interface JobSchedulerHealthOptions {
  /** More RUNNING leases past their lease than this is unhealthy. Default: reported, never unhealthy. */
  maxExpiredLeases?: number;
  /** Whether a declared job with no success for two intervals is unhealthy (default true). */
  staleJobsAreUnhealthy?: boolean;
}

/**
 * A @nestjs/terminus health indicator: the database answers, how many RUNNING leases are past
 * their lease (dead or stuck holders), and, with SchedulingModule, which declared jobs have had
 * no success for two intervals.
 *
 *   @Get('health') check() { return this.health.check([() => this.jobs.isHealthy('jobs')]); }
 */
@Injectable()
export class JobSchedulerHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly inspector: JobRunsInspector,
    @Optional() private readonly scheduled?: ScheduledJobsService,
  ) {}

  async isHealthy<const Key extends string>(key: Key, options: JobSchedulerHealthOptions = {}) {
    const indicator = this.health.check(key);
    let expiredLeases: number;
    try {
      expiredLeases = await this.inspector.countExpiredLeases();
    } catch (error) {
      return indicator.down({ database: 'unreachable', message: error instanceof Error ? error.message : String(error) });
    }
    const jobs = this.scheduled ? await this.scheduled.jobHealth() : [];
    const staleJobs = jobs.filter((job) => job.stale).map((job) => job.name);
    const details = {
      database: 'up',
      expiredLeases,
      jobs: Object.fromEntries(
        jobs.map((job) => [job.name, { lastSuccessAt: job.lastSuccessAt?.toISOString() ?? null, occurrencesSinceSuccess: job.occurrencesSinceSuccess, stale: job.stale }]),
      ),
    };
    const tooManyExpired = options.maxExpiredLeases !== undefined && expiredLeases > options.maxExpiredLeases;
    const staleUnhealthy = (options.staleJobsAreUnhealthy ?? true) && staleJobs.length > 0;
    return tooManyExpired || staleUnhealthy ? indicator.down({ ...details, staleJobs }) : indicator.up(details);
  }
}
