// @sdcorejs/nestjs/features/health: needs the optional peer @nestjs/terminus.
export { JobSchedulerHealthIndicator, type JobSchedulerHealthOptions } from './health/job-scheduler.health';
