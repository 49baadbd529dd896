import type { ScheduledRetentionOptions } from '../retention/scheduled-retention';
import type { JobExecution, MissedPolicy, OverlapPolicy, ScheduleOfRun } from '../scheduling.types';

/**
 * A schedule created at runtime: `DynamicSchedules.upsert(input)`. Validated like a declaration
 * (the same DeclarationError rules) before anything is written.
 */
export interface DynamicScheduleInput {
  /** Your stable id of the schedule: 1 to 256 characters. Upserting it again changes it. */
  id: string;
  /** The `<context>.<handler-name>` of a provider decorated with @ScheduleHandler. */
  handler: string;
  /** A 5-field cron expression, on `timeZone`'s wall clock (default UTC); or `every`. */
  cron?: string;
  timeZone?: string;
  /** An interval aligned on the Unix epoch (ms, or text like '5m'); or `cron`. */
  every?: string | number;
  /** JSON given to each run as `execution.schedule.data` (at most 64 KiB serialized). */
  data?: unknown;
  /** The tenant the schedule belongs to: `execution.tenantId` of its runs, and a filter of `list`. */
  tenantId?: string;
  /** false: stored, but no instance runs it (default true). */
  enabled?: boolean;
  overlap?: OverlapPolicy;
  missed?: MissedPolicy;
  timeoutMs?: number;
  leaseMs?: number;
}

/** A stored schedule, as `get` and `list` return it. */
export interface DynamicScheduleView {
  id: string;
  handler: string;
  cron?: string;
  timeZone?: string;
  /** The interval in ms (for `every` schedules). */
  every?: number;
  data: unknown;
  tenantId?: string;
  enabled: boolean;
  overlap: OverlapPolicy;
  missed: MissedPolicy;
  timeoutMs?: number;
  leaseMs?: number;
  /** Increases with every change of any schedule: a change made later has a greater version. */
  version: number;
  createdAt: Date;
  modifiedAt: Date;
}

export interface DynamicScheduleFilter {
  handler?: string;
  tenantId?: string;
  /** Schedules whose id starts with this text. */
  idPrefix?: string;
  enabled?: boolean;
  /** The `nextCursor` of the previous page. */
  after?: string;
  /** 1 to 1,000 (default 100). */
  limit?: number;
}

export interface DynamicSchedulePage {
  schedules: DynamicScheduleView[];
  /** Pass as `after` for the next page; absent on the last one. */
  nextCursor?: string;
}

/** What a run of a dynamic schedule receives: a declared job's execution, and its schedule. */
export interface DynamicScheduleExecution extends JobExecution {
  readonly schedule: ScheduleOfRun;
}

/** A provider decorated with @ScheduleHandler implements this. */
export interface DynamicScheduleHandler {
  run(execution: DynamicScheduleExecution): Promise<void> | void;
}

export interface DynamicSchedulesModuleOptions {
  /** Load the schedules and start their timers on bootstrap (default true). */
  start?: boolean;
  /**
   * How often each instance looks for changed schedules (one indexed statement; default 2 s): a
   * change made on one instance reaches every other within this (plus the statement's time).
   */
  changePollMs?: number;
  /** As SchedulingModule's: an occurrence reached later than this is missed (default 60 s). */
  lateToleranceMs?: number;
  /** As SchedulingModule's (default 30 s). */
  takeOverScanMs?: number;
  /**
   * As SchedulingModule's, but on by default (3 s): the occurrences due together (thousands of
   * schedules every minute) are claimed before their instant and start at it. 0 claims at the instant.
   */
  claimAheadMs?: number;
  /** As SchedulingModule's (default 10 s). */
  shutdownGraceMs?: number;
  /** As SchedulingModule's (default 60 s). */
  failureLogIntervalMs?: number;
  /** Pruning of the schedules' finished occurrences, as SchedulingModule's (default on: 7 d / 30 d, hourly). */
  retention?: ScheduledRetentionOptions | false;
  /** prom-client metrics, labelled by handler (never by schedule): true (default) or a registry. */
  metrics?: boolean | { registry: unknown };
}
