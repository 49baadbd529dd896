// @sdcorejs/nestjs/features/dashboard: the operator dashboard (needs an HTTP adapter: Express or Fastify).
export { JobSchedulerDashboardModule } from './dashboard/dashboard.module';
export {
  type DashboardAction,
  type DashboardActionEntry,
  type DashboardRequest,
  InvalidDashboardOptionsError,
  type JobSchedulerDashboardOptions,
} from './dashboard/dashboard.options';
export type { DashboardExpiredLease, DashboardJob, DashboardRunDetail, DashboardRunSummary, JobHealthState } from './dashboard/dashboard-views';
export type { OccurrenceOutcome, Timeline, TimelineGap, TimelineMark } from './dashboard/dashboard-timeline';
