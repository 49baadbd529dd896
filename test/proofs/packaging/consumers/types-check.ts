// Compiled by the packaging test under moduleResolution node16 and bundler.
import {
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_LEASE_MS,
  InvalidJobIdentityOptionsError,
  InvalidJobLeaseOptionsError,
  type JobAcquireOptions,
  type JobAcquireResult,
  type JobExecution,
  type JobExecutionLease,
  type JobLease,
  JobScheduler,
  JobSchedulerModule,
  type JobSchedulerModuleOptions,
  JobSchedulerService,
  JobSchedulerStatus,
  JobSchedulerType,
  LostJobLeaseError,
  type RunExclusiveResult,
  Scheduled,
  type ScheduledJob,
  SchedulingModule,
} from '@sdcorejs/nestjs/features';
import { FixedClock, InMemoryJobLease, ManualJobScheduler, ManualTimers } from '@sdcorejs/nestjs/features/testing';
import { type DashboardAction, JobSchedulerDashboardModule } from '@sdcorejs/nestjs/features/dashboard';

const options: JobAcquireOptions = { code: 'c', runKey: 'r', type: JobSchedulerType.SCHEDULE, leaseMs: DEFAULT_LEASE_MS, heartbeatMs: DEFAULT_HEARTBEAT_MS };
const moduleOptions: JobSchedulerModuleOptions = { global: true, nodeId: 'n' };

export const use = async (jobs: JobSchedulerService): Promise<RunExclusiveResult<number>> => {
  const lock: JobAcquireResult = await jobs.acquire(options);
  if (lock.acquired) {
    const lease: JobLease = { id: lock.id, ownerToken: lock.ownerToken };
    await jobs.complete(lease);
  } else {
    const none: undefined = lock.ownerToken;
    void none;
  }
  return jobs.runExclusive(options, async (lease: JobExecutionLease) => lease.fencingToken);
};

export const values = [
  InvalidJobIdentityOptionsError,
  InvalidJobLeaseOptionsError,
  LostJobLeaseError,
  JobScheduler,
  JobSchedulerStatus.SUCCESS,
  JobSchedulerModule.forRoot(moduleOptions),
  SchedulingModule.forRoot({ start: false }),
  Scheduled,
  new ManualJobScheduler({ clock: new FixedClock(0), lease: new InMemoryJobLease() }),
  ManualTimers,
  JobSchedulerDashboardModule.forRoot({ path: '/jobs', authorize: (_request, action: DashboardAction) => (action === 'read' ? 'reader' : false) }),
];
export type Job = ScheduledJob & { last?: JobExecution };
