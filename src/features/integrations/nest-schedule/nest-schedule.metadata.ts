/**
 * What @nestjs/schedule's decorators store on a method. Its keys are not exported from the
 * package's entry point, and @sdcorejs/nestjs must load without @nestjs/schedule installed, so
 * they are mirrored here (stable since @nestjs/schedule 1; asserted against the package by the
 * tests). This file is the one reader of that metadata.
 */
const SCHEDULER_TYPE = 'SCHEDULER_TYPE';
const SCHEDULER_NAME = 'SCHEDULER_NAME';
const SCHEDULE_CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
const SCHEDULE_INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';
const SCHEDULE_TIMEOUT_OPTIONS = 'SCHEDULE_TIMEOUT_OPTIONS';

/** @nestjs/schedule's `SchedulerType` enum. */
const CRON = 1;
const TIMEOUT = 2;
const INTERVAL = 3;

export const NEST_SCHEDULE_METADATA_KEYS = {
  SCHEDULER_TYPE,
  SCHEDULER_NAME,
  SCHEDULE_CRON_OPTIONS,
  SCHEDULE_INTERVAL_OPTIONS,
  SCHEDULE_TIMEOUT_OPTIONS,
} as const;

/** A @Cron's `cronTime` and the options that decide its instants, as @nestjs/schedule stores them. */
export interface NestCronDeclaration {
  type: 'cron';
  /** A cron expression (five or six fields), a Date or a Luxon DateTime. */
  cronTime: unknown;
  timeZone?: unknown;
  utcOffset?: unknown;
  name?: string;
}

export type NestScheduleDeclaration = NestCronDeclaration | { type: 'interval'; name?: string } | { type: 'timeout'; name?: string };

const read = (key: string, method: object): unknown => Reflect.getMetadata(key, method);

/** The @Cron, @Interval or @Timeout on a method, or undefined. */
export const nestScheduleOf = (method: unknown): NestScheduleDeclaration | undefined => {
  if (typeof method !== 'function') return undefined;
  const name = read(SCHEDULER_NAME, method);
  const named = typeof name === 'string' ? { name } : {};
  switch (read(SCHEDULER_TYPE, method)) {
    case CRON: {
      const options = (read(SCHEDULE_CRON_OPTIONS, method) ?? {}) as Record<string, unknown>;
      return { type: 'cron', cronTime: options.cronTime, timeZone: options.timeZone, utcOffset: options.utcOffset, ...named };
    }
    case INTERVAL:
      return { type: 'interval', ...named };
    case TIMEOUT:
      return { type: 'timeout', ...named };
    default:
      return undefined;
  }
};
