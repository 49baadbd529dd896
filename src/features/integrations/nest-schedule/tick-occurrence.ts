/**
 * Which due instant a cron tick belongs to. Every instance fires the same @Cron at (about) the
 * same due instants, each on its own clock and event loop; the tick is named by the due instant,
 * never by "now", so that every instance names it the same way. Pure.
 */

/** The due instants of a schedule: `next(after)` is the first one strictly after `after` (epoch ms), or null. */
export interface TickSchedule {
  next(after: number): number | null;
  readonly description: string;
}

/**
 * A tick that fires this close before a due instant belongs to it (a timer that fires a little
 * early, a clock stepped back by NTP): at most 1 s, and at most a tenth of the gap between that
 * instant and the one before, so that a late tick (far more common: a busy event loop) keeps its
 * own instant up to nine tenths of the gap.
 */
export const EARLY_TICK_TOLERANCE_MS = 1_000;
export const EARLY_TICK_FRACTION = 0.1;

/** How far back a due instant is looked for: cron's own horizon (8 years). */
const LOOKBACK_MS = 8 * 366 * 86_400_000;
/** Due instants walked through at most, looking for the latest (a dense cron after a long stall). */
const MAX_STEPS = 100_000;

/** The due instants around an instant: the latest at or before it and the first after it. */
export interface DueBracket {
  previous: number | null;
  upcoming: number | null;
}

/**
 * The due instants around `at`: galloping back from `at` until a due instant at or before it
 * appears, then forward to the last one. Two `next` calls for a tick less than 1 s late.
 */
export const dueBracket = (schedule: TickSchedule, at: number): DueBracket => {
  let upcoming: number | null | undefined;
  for (let back = 1_000; back <= 2 * LOOKBACK_MS; back *= 2) {
    let due = schedule.next(at - back);
    if (due === null || due > at) {
      upcoming = due; // the first due instant after at - back, so the first after at (or none)
      continue;
    }
    for (let step = 0; step < MAX_STEPS; step++) {
      const following = schedule.next(due);
      if (following === null || following > at) return { previous: due, upcoming: following };
      due = following;
    }
    return { previous: due, upcoming: schedule.next(at) };
  }
  return { previous: null, upcoming: upcoming === undefined ? schedule.next(at) : upcoming };
};

/** The latest due instant at or before `at`, or null. */
export const latestDueAtOrBefore = (schedule: TickSchedule, at: number): number | null => dueBracket(schedule, at).previous;

/**
 * The due instant of the tick that fired at `firedAt`: the next due instant if the tick came
 * within the early tolerance before it, else the latest due instant at or before `firedAt`, or
 * null if there is none.
 */
export const occurrenceOfTick = (schedule: TickSchedule, firedAt: number): number | null => {
  const { previous, upcoming } = dueBracket(schedule, firedAt);
  if (upcoming !== null) {
    const gap = previous === null ? Number.POSITIVE_INFINITY : upcoming - previous;
    if (upcoming - firedAt <= Math.min(EARLY_TICK_TOLERANCE_MS, gap * EARLY_TICK_FRACTION)) return upcoming;
  }
  return previous;
};
