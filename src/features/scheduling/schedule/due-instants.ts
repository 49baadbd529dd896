import type { DueSchedule } from './due-schedule';

/** Missed occurrences reported one by one, at most; the rest are counted in a summary line. */
export const MAX_MISSED_RECORDS = 100;
/** How many past occurrences are enumerated when looking for missed ones. */
const MAX_MISSED_SCAN = 10_000;

/** The due instants of a schedule in (after, until]: the latest, up to MAX_MISSED_RECORDS before it, and their count. */
export interface DueSince {
  latest: number | null;
  earlier: number[];
  count: number;
}

/**
 * Due instants in (after, until]. Past MAX_MISSED_SCAN it skips ahead to the last week, so the
 * count is then a floor. Pure.
 */
export const dueInstantsSince = (schedule: DueSchedule, after: number, until: number): DueSince => {
  const earlier: number[] = [];
  let latest: number | null = null;
  let count = 0;
  let cursor = after;
  for (;;) {
    if (count === MAX_MISSED_SCAN) cursor = Math.max(cursor, until - 7 * 86_400_000);
    const next = schedule.next(cursor);
    if (next === null || next > until) break;
    if (latest !== null) {
      earlier.push(latest);
      if (earlier.length > MAX_MISSED_RECORDS) earlier.shift();
    }
    latest = next;
    count++;
    cursor = next;
  }
  return { latest, earlier, count };
};
