import type { DueSchedule } from './due-schedule';

/** Missed occurrences reported one by one, at most; the rest are counted in a summary line. */
export const MAX_MISSED_RECORDS = 100;
/** Due instants walked one by one before the walk jumps ahead (see dueInstantsSince). */
export const MAX_DUE_WALK = 1_000;

/** The due instants of a schedule in (after, until]: the latest, up to MAX_MISSED_RECORDS before it, and their count. */
export interface DueSince {
  latest: number | null;
  earlier: number[];
  /** How many; estimated (from the schedule's average period) when the walk jumped ahead. */
  count: number;
}

/**
 * Due instants in (after, until]. The cost is bounded by MAX_DUE_WALK steps per phase, not by the
 * instants in the span (a boot after a week's gap of a job due every second): after each
 * MAX_DUE_WALK instants the walk jumps to where about twice the listed instants remain before
 * `until`, judged from the average period walked so far, and counts the instants it jumped over
 * by that period (the count is then an estimate; the latest and the listed ones are exact). Pure.
 */
export const dueInstantsSince = (schedule: DueSchedule, after: number, until: number): DueSince => {
  const earlier: number[] = [];
  let latest: number | null = null;
  let count = 0;
  let cursor = after;
  let phaseStart: number | null = null;
  let phaseSteps = 0;
  for (;;) {
    if (phaseSteps === MAX_DUE_WALK && phaseStart !== null) {
      const periodMs = (cursor - phaseStart) / (phaseSteps - 1);
      const jumpTo = until - periodMs * 2 * (MAX_MISSED_RECORDS + 2);
      if (periodMs > 0 && jumpTo > cursor) {
        count += Math.floor((jumpTo - cursor) / periodMs);
        cursor = jumpTo;
      }
      phaseStart = null;
      phaseSteps = 0;
    }
    const next = schedule.next(cursor);
    if (next === null || next > until) break;
    if (latest !== null) {
      earlier.push(latest);
      if (earlier.length > MAX_MISSED_RECORDS) earlier.shift();
    }
    latest = next;
    count++;
    phaseStart ??= next;
    phaseSteps++;
    cursor = next;
  }
  return { latest, earlier, count };
};

/** How many of a schedule's instants fall in (after, now], counted up to `cap` (for health: "late" is two or more). Pure. */
export const dueCountSince = (schedule: DueSchedule, after: number, now: number, cap: number): number => {
  let count = 0;
  let cursor = after;
  while (count < cap) {
    const next = schedule.next(cursor);
    if (next === null || next > now) break;
    count++;
    cursor = next;
  }
  return count;
};
