import { CronSchedule, type DueSchedule, IntervalSchedule } from '../scheduling/schedule/due-schedule';

/** A job's schedule as the dashboard shows it: the expression, and the same in words. */
export interface ScheduleDescription {
  kind: 'cron' | 'every';
  /** The cron expression, or the interval in ms. */
  expression: string;
  words: string;
  /** The cron's time zone; null for an interval (epoch-aligned, no zone). */
  timeZone: string | null;
}

const UNITS: ReadonlyArray<[number, string]> = [
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1_000, 'second'],
  [1, 'millisecond'],
];

/** "every 15 minutes", "every hour", "every 1500 milliseconds". */
export const intervalInWords = (everyMs: number): string => {
  const [size, unit] = UNITS.find(([ms]) => everyMs % ms === 0) ?? [1, 'millisecond'];
  const count = everyMs / size;
  return count === 1 ? `every ${unit}` : `every ${count} ${unit}s`;
};

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const dayOf = (text: string): string | null => {
  const index = /^\d$/.test(text) ? Number(text) : DAY_NAMES.indexOf(text.toUpperCase());
  return index >= 0 && index <= 7 ? DAYS[index] : null;
};

/** "Monday to Friday", "Monday, Wednesday", or null when the field says more than that. */
const daysInWords = (field: string): string | null => {
  const parts = field.split(',').map((part) => {
    const range = part.split('-');
    if (range.length === 2) {
      const [from, to] = range.map(dayOf);
      return from && to ? `${from} to ${to}` : null;
    }
    return range.length === 1 ? dayOf(part) : null;
  });
  return parts.every((part) => part !== null) ? parts.join(', ') : null;
};

const twoDigits = (value: string): string => value.padStart(2, '0');
const NUMBER = /^\d{1,2}$/;

/** The common five-field shapes in words; null for the others (the expression is shown then). */
export const cronInWords = (expression: string): string | null => {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) return null;
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields;
  const everyDay = dayOfMonth === '*' && month === '*' && dayOfWeek === '*';
  if (everyDay && hour === '*') {
    if (minute === '*') return 'every minute';
    const step = /^\*\/(\d+)$/.exec(minute);
    if (step) return `every ${step[1]} minutes`;
    if (NUMBER.test(minute)) return `every hour at minute ${Number(minute)}`;
    return null;
  }
  if (!NUMBER.test(minute)) return null;
  const hourStep = /^\*\/(\d+)$/.exec(hour);
  if (everyDay && hourStep) return `every ${hourStep[1]} hours at minute ${Number(minute)}`;
  if (!NUMBER.test(hour)) return null;
  const time = `${twoDigits(hour)}:${twoDigits(minute)}`;
  if (everyDay) return `every day at ${time}`;
  if (dayOfMonth === '*' && month === '*') {
    const days = daysInWords(dayOfWeek);
    return days === null ? null : `${days} at ${time}`;
  }
  if (NUMBER.test(dayOfMonth) && month === '*' && dayOfWeek === '*') return `on day ${Number(dayOfMonth)} of every month at ${time}`;
  return null;
};

export const describeSchedule = (schedule: DueSchedule): ScheduleDescription => {
  if (schedule instanceof IntervalSchedule) {
    return { kind: 'every', expression: `${schedule.everyMs} ms`, words: intervalInWords(schedule.everyMs), timeZone: null };
  }
  if (schedule instanceof CronSchedule) {
    const words = cronInWords(schedule.expression) ?? `cron "${schedule.expression}"`;
    return { kind: 'cron', expression: schedule.expression, words: `${words} (${schedule.timeZone})`, timeZone: schedule.timeZone };
  }
  return { kind: 'cron', expression: schedule.description, words: schedule.description, timeZone: null };
};

/** The next `count` due instants after `now`. */
export const nextDueInstants = (schedule: DueSchedule, now: number, count = 3): Date[] => {
  const instants: Date[] = [];
  let cursor = now;
  while (instants.length < count) {
    const next = schedule.next(cursor);
    if (next === null) break;
    instants.push(new Date(next));
    cursor = next;
  }
  return instants;
};
