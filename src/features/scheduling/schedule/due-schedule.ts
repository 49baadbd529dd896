import { Cron } from 'croner';
import { runsEveryHour } from './cron-expression';
import { instantsAt, offsetAt, wallTimeOf } from './time-zone';

/** Something that names due instants: every instance computes the same ones. */
export interface DueSchedule {
  /** The first due instant strictly after `after` (epoch ms), or null if there is none. */
  next(after: number): number | null;
  readonly description: string;
}

/** Every `everyMs`, aligned on the Unix epoch: due whenever epoch ms % everyMs === 0. */
export class IntervalSchedule implements DueSchedule {
  readonly description: string;

  constructor(readonly everyMs: number) {
    this.description = `every ${everyMs} ms`;
  }

  next(after: number): number {
    return (Math.floor(after / this.everyMs) + 1) * this.everyMs;
  }
}

/**
 * How far ahead every schedule must fire: 8 years (2928 days), the longest wait of a cron the
 * grammar can write (29 February across a century year, as from 2096 to 2104). A cron that does
 * not fire within it never fires (`0 0 30 2 *`); an interval may not be longer.
 */
export const SCHEDULE_HORIZON_MS = 8 * 366 * 86_400_000;
/** The horizon as `every` text: `2928d`. */
export const SCHEDULE_HORIZON_TEXT = `${SCHEDULE_HORIZON_MS / 86_400_000}d`;

/** Clocks never move by more than this at a DST transition (2 h at most in the tz database). */
const MAX_SHIFT_MS = 3 * 3_600_000;

/**
 * A cron expression evaluated on the wall clock of a time zone, with the DST rule:
 * - clocks set forward: a wall time that does not exist gives no run;
 * - clocks set back: a wall time that occurs twice runs once, the first time, unless the hour
 *   field is `*` (a job of every hour), which runs through the repeated hour twice.
 * croner computes the matching wall times (in UTC, where no DST exists); this class maps them
 * to instants.
 */
export class CronSchedule implements DueSchedule {
  readonly description: string;
  private readonly cron: Cron;
  private readonly everyHour: boolean;

  constructor(
    readonly expression: string,
    readonly timeZone: string,
  ) {
    // A fixed offset of 0 rather than the zone 'UTC': the same wall times, without an Intl call per step.
    this.cron = new Cron(expression, { utcOffset: 0, paused: true, mode: '5-part', domAndDow: false });
    this.everyHour = runsEveryHour(expression);
    this.description = `cron "${expression}" in ${timeZone}`;
  }

  next(after: number): number | null {
    const offset = offsetAt(after, this.timeZone);
    const wall = this.nextWallTime(after + offset);
    if (wall === null) return null;
    const instant = wall - offset;
    // Fast path, when the offset at `after` also holds MAX_SHIFT_MS after it (no wall time up to
    // after's comes again later) and MAX_SHIFT_MS either side of `instant` (`wall` occurs once,
    // there, and no later wall time comes before it). Changes in between do not matter; a change
    // just before `instant` does (a repeated wall time: its first occurrence is an hour earlier).
    if (
      offsetAt(after + MAX_SHIFT_MS, this.timeZone) === offset &&
      offsetAt(instant - MAX_SHIFT_MS, this.timeZone) === offset &&
      offsetAt(instant + MAX_SHIFT_MS, this.timeZone) === offset
    ) {
      return instant;
    }
    return this.nextByScan(after);
  }

  /**
   * The reference: every candidate wall time from MAX_SHIFT_MS before `after`'s, each mapped to
   * its instants by the rule, until none can come earlier. Slower; next() gives the same answer.
   */
  nextByScan(after: number): number | null {
    const wallAfter = wallTimeOf(after, this.timeZone);
    let best: number | null = null;
    let bestWall = 0;
    let wall = this.nextWallTime(wallAfter - MAX_SHIFT_MS - 1);
    while (wall !== null && wall <= wallAfter + SCHEDULE_HORIZON_MS) {
      if (best !== null && wall > bestWall + MAX_SHIFT_MS) break;
      for (const instant of this.instantsFor(wall)) {
        if (instant > after && (best === null || instant < best)) {
          best = instant;
          bestWall = wall;
        }
      }
      wall = this.nextWallTime(wall);
    }
    return best;
  }

  private instantsFor(wall: number): number[] {
    const instants = instantsAt(wall, this.timeZone);
    return this.everyHour ? instants : instants.slice(0, 1);
  }

  private nextWallTime(afterWall: number): number | null {
    const next = this.cron.nextRun(new Date(afterWall));
    return next === null ? null : next.getTime();
  }
}
