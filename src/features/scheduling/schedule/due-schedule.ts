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

/** Clocks never move by more than this at a DST transition (2 h at most in the tz database). */
const MAX_SHIFT_MS = 3 * 3_600_000;
const HORIZON_MS = 8 * 366 * 86_400_000;

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
    this.cron = new Cron(expression, { timezone: 'UTC', paused: true, mode: '5-part', domAndDow: false });
    this.everyHour = runsEveryHour(expression);
    this.description = `cron "${expression}" in ${timeZone}`;
  }

  next(after: number): number | null {
    const wallAfter = wallTimeOf(after, this.timeZone);
    const first = this.nextWallTime(wallAfter);
    if (first === null) return null;
    // Fast path: no clock change near [after, first]: wall time and instants move together.
    const firstInstant = first - offsetAt(after, this.timeZone);
    if (offsetAt(after - MAX_SHIFT_MS, this.timeZone) === offsetAt(firstInstant + MAX_SHIFT_MS, this.timeZone)) {
      return firstInstant;
    }
    return this.scan(after, wallAfter);
  }

  /** Near a transition the order of wall times and instants differs: look at every candidate. */
  private scan(after: number, wallAfter: number): number | null {
    let best: number | null = null;
    let wall = this.nextWallTime(wallAfter - MAX_SHIFT_MS - 1);
    while (wall !== null && wall <= wallAfter + HORIZON_MS) {
      if (best !== null && wall > wallTimeOf(best, this.timeZone) + MAX_SHIFT_MS) break;
      for (const instant of this.instantsFor(wall)) {
        if (instant > after && (best === null || instant < best)) best = instant;
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
