// @sdcorejs/nestjs/features/testing: a manual scheduler on a fixed clock, for specs about time.
export { FixedClock } from './scheduling/testing/fixed-clock';
export { ManualTimers, type ManualTimersOptions } from './scheduling/testing/manual-timers';
export { InMemoryJobLease } from './scheduling/testing/in-memory-job-lease';
export { ManualJobScheduler, type ManualJobSchedulerOptions } from './scheduling/testing/manual-job-scheduler';
