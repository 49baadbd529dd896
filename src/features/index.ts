// The public surface of @sdcorejs/nestjs/features. Each export is listed by name on purpose.

export { JobScheduler, JobSchedulerStatus, JobSchedulerType } from './job-scheduler/job-scheduler.entity';
export type {
  JobAcquireManyOptions,
  JobAcquireManyRun,
  JobAcquireOptions,
  JobAcquireResult,
  JobAcquiredLease,
  JobBatchAcquireOptions,
  JobExecutionLease,
  JobFinalizeOptions,
  JobLease,
  JobLeaseHold,
  JobLeaseWithData,
  JobRunAcquiredOptions,
  RunExclusiveResult,
} from './job-scheduler/job-scheduler.types';
export { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS } from './job-scheduler/job-scheduler.constants';
export { DEFAULT_STATEMENT_TIMEOUT_MS, leaseSafetyMarginMs } from './job-scheduler/run/lease-deadline';
export type { JobLeaseReplicationStatus } from './job-scheduler/operations/replication-check';
export {
  InvalidJobCallbackError,
  InvalidJobDataError,
  InvalidJobIdentityOptionsError,
  InvalidJobLeaseError,
  InvalidJobLeaseOptionsError,
  InvalidJobQueryOptionsError,
  InvalidJobSchedulerModuleOptionsError,
  JobLeaseDatabaseError,
  type JobLeaseDatabaseOperation,
  JobLeaseReplicationError,
  JobSchedulerSchemaError,
  JobShutdownError,
  LostJobLeaseError,
} from './job-scheduler/job-scheduler.errors';
export { JobSchedulerService } from './job-scheduler/job-scheduler.service';
export { createJobScheduler, type StandaloneJobScheduler } from './job-scheduler/job-scheduler.standalone';
export type { JobSchedulerDatabase, JobSchedulerPoolSource } from './job-scheduler/lease-database';
export { JobRunsInspector } from './job-scheduler/operations/job-runs.inspector';
export { JobRetention, RETENTION_JOB_CODE, RETENTION_WARNING_ROWS } from './job-scheduler/operations/job-retention';
export type { JobRetentionOptions } from './job-scheduler/job-scheduler.options';
export type { ExpiredJobLease, JobPruneOptions, JobRunFilter, JobRunPage, JobRunView } from './job-scheduler/operations/job-run.types';
export { JobSchedulerModule } from './job-scheduler/job-scheduler.module';
export type { JobSchedulerModuleOptions } from './job-scheduler/job-scheduler.options';
export type { LeaseTimingDefaults } from './job-scheduler/lease-timing';
export {
  AddJobPauseTable1764547200008,
  AddJobSchedulerAcquireFunction1764547200005,
  AddJobSchedulerCodeRunKeyIndex1764547200002,
  AddJobSchedulerFencingTokenSequence1764547200003,
  AddJobSchedulerRunningIndex1764547200006,
  CreateJobScheduleTable1764547200007,
  CreateJobSchedulerTable1764547200000,
  IndexJobSchedulerLeaseExpiry1764547200009,
  InsertJobSchedulerLeaseExpiriesWithoutConflictCheck1764547200011,
  JobSchedulerMigrations,
  TrackJobSchedulerLeaseExpiries1764547200010,
  TuneJobSchedulerTableForChurn1764547200004,
  UpgradeJobSchedulerTableFrom111764547200001,
} from './job-scheduler/job-scheduler.migrations';
export type {
  AbandonedPolicy,
  JobExecution,
  JobPolicies,
  JobRunListener,
  JobRunOutcome,
  JobRunRecord,
  JobSchedule,
  JobSettings,
  JobTenancy,
  MissedPolicy,
  OverlapPolicy,
  ScheduledJob,
  ScheduledJobOptions,
  ScheduleOfRun,
  TenantDirectory,
} from './scheduling/scheduling.types';
export { DynamicSchedules, DYNAMIC_RETENTION_CODE } from './scheduling/dynamic/dynamic-schedules.service';
export { DynamicSchedulesModule } from './scheduling/dynamic/dynamic-schedules.module';
export { ScheduleHandler } from './scheduling/dynamic/schedule-handler.decorator';
export type {
  DynamicScheduleExecution,
  DynamicScheduleFilter,
  DynamicScheduleHandler,
  DynamicScheduleInput,
  DynamicSchedulePage,
  DynamicScheduleView,
  DynamicSchedulesModuleOptions,
} from './scheduling/dynamic/dynamic-schedule.types';
export {
  DeclarationError,
  DynamicScheduleBatchError,
  JobAbandonedError,
  JobScheduleRemovedError,
  JobTenantInvalidError,
  JobTimeoutError,
  SchedulingError,
} from './scheduling/scheduling.errors';
export { Scheduled } from './scheduling/scheduled.decorator';
export { SchedulingModule } from './scheduling/scheduling.module';
export { type SchedulingModuleOptions, TENANT_DIRECTORY } from './scheduling/scheduling.module-definition';
export { DEFAULT_SCHEDULED_RETENTION, type ScheduledRetentionOptions } from './scheduling/retention/scheduled-retention';
export { SCHEDULED_RETENTION_CODE } from './scheduling/retention/scheduled-retention.timer';
export { currentJobExecution } from './scheduling/occurrence/job-execution-context';
export { type ScheduledJobHealth, ScheduledJobsService } from './scheduling/scheduled-jobs.service';
export { RunOnce } from './integrations/nest-schedule/run-once.decorator';
export { RunOnceModule } from './integrations/nest-schedule/run-once.module';
export { RunOnceError, type RunOnceErrorCode } from './integrations/nest-schedule/run-once.errors';
export type { RunOnceErrorPolicy, RunOnceModuleOptions, RunOnceOptions } from './integrations/nest-schedule/run-once.types';
