import { Injectable, Optional } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { JobRunsInspector } from '../job-scheduler/operations/job-runs.inspector';
import { JobSchedulerService } from '../job-scheduler/job-scheduler.service';
import type { JobLeaseReplicationStatus } from '../job-scheduler/operations/replication-check';
import { ScheduledJobsService } from '../scheduling/scheduled-jobs.service';

export interface JobSchedulerHealthOptions {
  /** More RUNNING leases past their lease than this is unhealthy. Default: reported, never unhealthy. */
  maxExpiredLeases?: number;
  /** Whether a declared job with no success for two intervals is unhealthy (default true). */
  staleJobsAreUnhealthy?: boolean;
  /**
   * Whether replication that a failover could lose leases to (streaming standbys without
   * synchronous replication) is unhealthy. Default false: reported under `replication`, never down.
   */
  requireSynchronousReplication?: boolean;
}

/**
 * A @nestjs/terminus health indicator: the database answers, how many RUNNING leases are past
 * their lease (dead or stuck holders), whether a failover could forget leases (replication),
 * and, with SchedulingModule, which declared jobs have had no success for two intervals. It sits
 * above the lease and the scheduler, and reads both.
 *
 *   @Get('health') check() { return this.health.check([() => this.jobs.isHealthy('jobs')]); }
 */
@Injectable()
export class JobSchedulerHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly inspector: JobRunsInspector,
    private readonly lease: JobSchedulerService,
    @Optional() private readonly scheduled?: ScheduledJobsService,
  ) {}

  async isHealthy<const Key extends string>(key: Key, options: JobSchedulerHealthOptions = {}) {
    const indicator = this.health.check(key);
    let expiredLeases: number;
    let replication: JobLeaseReplicationStatus;
    try {
      [expiredLeases, replication] = await Promise.all([this.inspector.countExpiredLeases(), this.lease.replicationStatus()]);
    } catch (error) {
      return indicator.down({ database: 'unreachable', message: error instanceof Error ? error.message : String(error) });
    }
    const jobs = this.scheduled ? await this.scheduled.jobHealth() : [];
    const staleJobs = jobs.filter((job) => job.stale).map((job) => job.name);
    const details = {
      database: 'up',
      expiredLeases,
      replication: {
        safe: replication.safe,
        standbys: replication.standbys,
        synchronousStandbyNames: replication.synchronousStandbyNames,
        synchronousCommit: replication.synchronousCommit,
        risk: replication.risk,
      },
      jobs: Object.fromEntries(
        jobs.map((job) => [
          job.name,
          { lastSuccessAt: job.lastSuccessAt?.toISOString() ?? null, occurrencesSinceSuccess: job.occurrencesSinceSuccess, stale: job.stale },
        ]),
      ),
    };
    const tooManyExpired = options.maxExpiredLeases !== undefined && expiredLeases > options.maxExpiredLeases;
    const staleUnhealthy = (options.staleJobsAreUnhealthy ?? true) && staleJobs.length > 0;
    const unsafeReplication = options.requireSynchronousReplication === true && !replication.safe;
    return tooManyExpired || staleUnhealthy || unsafeReplication ? indicator.down({ ...details, staleJobs }) : indicator.up(details);
  }
}
