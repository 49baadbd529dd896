import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { SchedulerHistory, SchedulerLease, SchedulerTimers } from './scheduler-ports';
import type { ScheduledRetentionOptions } from './retention/scheduled-retention';
import type { JobSettings, TenantDirectory } from './scheduling.types';

export interface SchedulingModuleOptions {
  /** Start the timers on bootstrap (default true). false: jobs registered, no timers; runNow works. */
  start?: boolean;
  /** Per-job settings keyed by job name; a key no module declares is refused (UNKNOWN_JOB). */
  settings?: Record<string, JobSettings>;
  /**
   * The tenants of per-tenant jobs, listed at each occurrence. Default: the provider registered
   * under TENANT_DIRECTORY anywhere in the application, if any.
   */
  tenants?: TenantDirectory;
  /**
   * An occurrence reached later than this (a blocked loop, a clock jump, and also a restart: the
   * occurrences due while no instance ran are judged by it too) is missed. Default 60 s. A job's
   * jitterMs must be below it.
   */
  lateToleranceMs?: number;
  /**
   * How often each instance looks for occurrences whose holder stopped heartbeating, to take
   * them over (one indexed query for all jobs). Default 30 s: with the default 60 s lease, an
   * abandoned occurrence runs again within about 1 to 1.5 leases.
   */
  takeOverScanMs?: number;
  /**
   * Claim each occurrence's lease this long before its due instant, so that jobs due together
   * start at their instant instead of after their claims (default 2 s on the PostgreSQL lease; 0
   * with a `lease` of your own: claimed at the instant). An instance that stops within this time
   * before an instant hands what it claimed over to the other instances (left RUNNING with its
   * lease run out: their take-over scan runs it). Global jobs with overlap 'skip' and a lease at
   * least 4 times this; at most 60 s.
   */
  claimAheadMs?: number;
  /** On shutdown: how long running jobs get after their signal aborts, before their leases are released. Default 10 s. */
  shutdownGraceMs?: number;
  /**
   * A job that keeps failing with the same error logs it whole once (with its stack), then a
   * summary (count and last message) at most this often, and its recovery. Default 60 s.
   */
  failureLogIntervalMs?: number;
  /**
   * Prune declared jobs' finished occurrences, once per period across instances. On by default:
   * SUCCESS kept 7 days, FAIL 30 days, every hour; each job keeps its rows at least two of its
   * intervals plus lateToleranceMs. `false` keeps them forever. INITIAL rows and hand-acquired
   * runs are never touched (see JobSchedulerModule's `retention` for those).
   */
  retention?: ScheduledRetentionOptions | false;
  /**
   * Jobs paused at runtime (the dashboard's pause / resume) are read from the pause table
   * (migration AddJobPauseTable1764547200008) at boot and every `pollMs` (default 5 s, one
   * statement per poll): a paused job's timers stop on every instance. `false`: not read.
   */
  pauses?: { pollMs?: number } | false;
  /** prom-client metrics (when installed): true for the default registry, or a registry. Default true. */
  metrics?: boolean | { registry: unknown };
  /** For tests: timers (ManualTimers) and a lease (InMemoryJobLease) instead of the system clock and PostgreSQL. */
  timers?: SchedulerTimers;
  lease?: SchedulerLease;
  /** With `lease`: where missed occurrences are looked up (InMemoryJobLease is one). */
  history?: SchedulerHistory;
}

/** Register your TenantDirectory under this token (or pass `tenants`). */
export const TENANT_DIRECTORY = Symbol('TENANT_DIRECTORY');

export const {
  ConfigurableModuleClass: SchedulingConfigurableModule,
  MODULE_OPTIONS_TOKEN: SCHEDULING_MODULE_OPTIONS,
  OPTIONS_TYPE: SCHEDULING_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: SCHEDULING_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<SchedulingModuleOptions>({ moduleName: 'Scheduling' })
  .setClassMethodName('forRoot')
  .setExtras({ global: true }, (definition, extras) => ({ ...definition, global: extras.global }))
  .build();
