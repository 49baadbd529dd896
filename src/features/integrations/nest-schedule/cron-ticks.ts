import { createRequire } from 'node:module';
import type { NestCronDeclaration } from './nest-schedule.metadata';
import { runOnceErrors } from './run-once.errors';
import type { TickSchedule } from './tick-occurrence';

/**
 * The due instants of a @Cron, computed by the `cron` package's own CronTime: the code that arms
 * @nestjs/schedule's timers. Its grammar (five or six fields, seconds first, names, presets), its
 * time zones, utcOffset and its handling of DST transitions are then the timer's, by construction;
 * a second cron implementation would disagree with the timer somewhere (it does at DST
 * transitions), and a tick it cannot match is a tick that no instance runs.
 */

/** The part of cron's CronTime used here (cron 3 and 4). */
interface CronTimeLike {
  timeZone?: string;
  utcOffset?: number;
  getNextDateFrom(start: Date, timeZone?: string): { toMillis(): number };
}
type CronTimeClass = new (source: unknown, timeZone?: unknown, utcOffset?: unknown) => CronTimeLike;

let cronTimeClass: CronTimeClass | undefined;

/**
 * cron's CronTime, resolved from @nestjs/schedule's own location first (the copy its timers use,
 * also under package managers that do not hoist), then from here.
 */
const loadCronTime = (): CronTimeClass => {
  if (cronTimeClass) return cronTimeClass;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional peer, loaded only when a @Cron is found
  const loaders = [() => createRequire(require.resolve('@nestjs/schedule'))('cron') as unknown, () => require('cron') as unknown];
  let failure: unknown;
  for (const load of loaders) {
    try {
      const candidate = (load() as { CronTime?: unknown } | undefined)?.CronTime as CronTimeClass | undefined;
      if (typeof candidate === 'function' && typeof (candidate.prototype as { getNextDateFrom?: unknown } | undefined)?.getNextDateFrom === 'function') {
        cronTimeClass = candidate;
        return candidate;
      }
    } catch (error) {
      failure = error;
    }
  }
  throw runOnceErrors.cronUnavailable(failure);
};

/** The zone cron's `sendAt` computes in: a fixed offset (utcOffset, in minutes) or a named zone. */
const zoneOf = (time: CronTimeLike): string | undefined => {
  if (time.utcOffset === undefined || time.utcOffset === null) return time.timeZone;
  const offset = Number(time.utcOffset);
  const hours = Math.trunc(offset / 60);
  const minutes = Math.abs(offset - hours * 60);
  return `UTC${offset < 0 ? '-' : '+'}${String(Math.abs(hours)).padStart(2, '0')}:${String(minutes).padStart(2, '0')}`;
};

/** A Date or a Luxon DateTime: a @Cron that fires once, at that instant. */
const fixedInstantOf = (cronTime: unknown): number | null => {
  if (cronTime instanceof Date) return cronTime.getTime();
  if (typeof cronTime === 'object' && cronTime !== null && typeof (cronTime as { toMillis?: unknown }).toMillis === 'function') {
    return (cronTime as { toMillis(): number }).toMillis();
  }
  return null;
};

/**
 * The tick schedule of a @Cron as @nestjs/schedule stores it (cronTime, timeZone, utcOffset).
 * Throws RunOnceError `INVALID_CRON` where @nestjs/schedule would fail to start it.
 */
export const cronTicks = (method: string, cron: Pick<NestCronDeclaration, 'cronTime' | 'timeZone' | 'utcOffset'>): TickSchedule => {
  const fixed = fixedInstantOf(cron.cronTime);
  if (fixed !== null) {
    if (!Number.isFinite(fixed)) throw runOnceErrors.invalidCron(method, new Error('an invalid date'));
    return { description: `once at ${new Date(fixed).toISOString()}`, next: (after) => (fixed > after ? fixed : null) };
  }
  const CronTime = loadCronTime();
  const { cronTime, timeZone, utcOffset } = cron;
  let time: CronTimeLike;
  try {
    // As cron's CronJob builds it: a time zone, else an offset, else the process's zone.
    time =
      timeZone !== undefined && timeZone !== null
        ? new CronTime(cronTime, timeZone, null)
        : utcOffset !== undefined && utcOffset !== null
          ? new CronTime(cronTime, null, utcOffset)
          : new CronTime(cronTime);
  } catch (error) {
    throw runOnceErrors.invalidCron(method, error);
  }
  const zone = zoneOf(time);
  const description = `cron "${String(cronTime)}" in ${zone ?? 'the process time zone'}`;
  return {
    description,
    next: (after) => {
      try {
        const next = time.getNextDateFrom(new Date(after), zone).toMillis();
        return Number.isFinite(next) ? next : null;
      } catch {
        // cron finds no instant within 8 years
        return null;
      }
    },
  };
};

/**
 * Whether a cron expression's instants depend on the time zone it is read in ("0 3 * * *" does,
 * "*\/2 * * * * *" does not): compared over its next few instants in UTC and in UTC+05:30.
 */
export const dependsOnTimeZone = (method: string, cronTime: unknown, from: number): boolean => {
  if (typeof cronTime !== 'string') return false;
  const inUtc = cronTicks(method, { cronTime, timeZone: 'UTC' });
  const inKolkata = cronTicks(method, { cronTime, timeZone: 'Asia/Kolkata' });
  let a: number | null = from;
  let b: number | null = from;
  for (let i = 0; i < 4; i++) {
    a = inUtc.next(a);
    b = inKolkata.next(b as number);
    if (a !== b) return true;
    if (a === null) return false;
  }
  return false;
};
