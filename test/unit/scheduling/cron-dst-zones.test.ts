import fc from 'fast-check';
import { CronSchedule } from '../../../src/features/scheduling/schedule/due-schedule';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The years searched for clock changes. */
const FROM = Date.UTC(2026, 0, 1);
const UNTIL = Date.UTC(2028, 0, 1);
/** fast-check runs per zone: 130-odd zones: the file takes about 10 s on one core. */
const RUNS_PER_ZONE = 12;

const formatters = new Map<string, Intl.DateTimeFormat>();
/** The zone's wall time at an instant as UTC-style ms, read with Intl apart from the implementation. */
const wallOf = (zone: string, instant: number): number => {
  let formatter = formatters.get(zone);
  if (!formatter) {
    const fields = { year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' } as const;
    formatter = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', ...fields });
    formatters.set(zone, formatter);
  }
  const part: Record<string, number> = {};
  for (const { type, value } of formatter.formatToParts(instant)) part[type] = Number(value);
  return Date.UTC(part.year, part.month - 1, part.day, part.hour, part.minute, part.second) + (((instant % 1000) + 1000) % 1000);
};
const offsetOf = (zone: string, instant: number): number => wallOf(zone, instant) - instant;

interface Change {
  /** The first instant of the new offset. */
  at: number;
  before: number;
  after: number;
}

/** The zone's clock changes in [FROM, UNTIL): a daily look, then halving to the millisecond. */
const changesOf = (zone: string): Change[] => {
  const changes: Change[] = [];
  let before = offsetOf(zone, FROM);
  for (let day = FROM; day < UNTIL; day += DAY) {
    const next = offsetOf(zone, day + DAY);
    if (next === before) continue;
    let low = day;
    let high = day + DAY;
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (offsetOf(zone, middle) === before) low = middle;
      else high = middle;
    }
    changes.push({ at: high, before, after: offsetOf(zone, high) });
    before = next;
  }
  return changes;
};

/** Whether the zone's offset changes in those years (a weekly look, before the daily one). */
const changesAtAll = (zone: string): boolean => {
  const first = offsetOf(zone, FROM);
  for (let week = FROM; week < UNTIL; week += 7 * DAY) if (offsetOf(zone, week) !== first) return true;
  return false;
};

/** Every IANA zone of the runtime whose offset changes in those years, with its changes. */
const zonesWithChanges = Intl.supportedValuesOf('timeZone')
  .filter(changesAtAll)
  .map((zone) => ({ zone, changes: changesOf(zone) }));

/**
 * A cron aimed at a clock change: its minute and hour (or `*`), day (of the month, of the week,
 * or `*`) and month (or `*`) are those of a wall time within 3 h of the change, so that it falls
 * in the skipped or repeated hour, or next to it, every minute (of one hour), every quarter of an
 * hour, or as rarely as once a year.
 */
const cronNear = (wall: number, shape: { minute: string; hour: string; day: string; month: string }): string => {
  const date = new Date(wall);
  // Every minute of every hour is left out: the reference scans 6 h of minutes per call (~50 ms).
  const everyMinute = shape.minute === 'every' && shape.hour === 'pinned';
  const minute = shape.minute === 'pinned' ? `${date.getUTCMinutes()}` : everyMinute ? '*' : `${date.getUTCMinutes() % 15}-59/15`;
  const hour = shape.hour === 'pinned' ? `${date.getUTCHours()}` : '*';
  const dayOfMonth = shape.day === 'pinned' ? `${date.getUTCDate()}` : '*';
  const dayOfWeek = shape.day === 'weekday' ? `${date.getUTCDay()}` : '*';
  const month = shape.month === 'pinned' ? `${date.getUTCMonth() + 1}` : '*';
  return `${minute} ${hour} ${dayOfMonth} ${month} ${dayOfWeek}`;
};

describe('cron next() on every zone with clock changes', () => {
  it('finds the zones (the runtime has tz data)', () => {
    expect(zonesWithChanges.length).toBeGreaterThan(50);
    expect(zonesWithChanges.map(({ zone }) => zone)).toEqual(expect.arrayContaining(['America/New_York', 'Europe/Paris', 'Australia/Lord_Howe']));
  });

  it('gives what the scan of every candidate gives, for `after` a minute to a year before a change (or near after it)', () => {
    const started = performance.now();
    for (const { zone, changes } of zonesWithChanges) {
      fc.assert(
        fc.property(
          fc.constant(zone),
          fc.constantFrom(...changes),
          fc.integer({ min: -180, max: 180 }),
          fc.record({
            minute: fc.constantFrom('pinned', 'pinned', 'pinned', 'step', 'step', 'every'),
            hour: fc.constantFrom('pinned', 'pinned', 'every'),
            day: fc.constantFrom('pinned', 'weekday', 'every'),
            month: fc.constantFrom('pinned', 'every'),
          }),
          fc.oneof(fc.integer({ min: -6 * HOUR, max: 6 * HOUR }), fc.integer({ min: MINUTE, max: DAY }), fc.integer({ min: DAY, max: 366 * DAY })),
          (zone, change, shiftMinutes, shape, step) => {
            const wall = Math.floor((change.at + change.before) / MINUTE) * MINUTE + shiftMinutes * MINUTE;
            const expression = cronNear(wall, shape);
            const schedule = new CronSchedule(expression, zone);
            let cursor = change.at - step;
            for (let call = 0; call < 2; call++) {
              const next = schedule.next(cursor);
              expect({ expression, zone, after: new Date(cursor).toISOString(), next: next === null ? null : new Date(next).toISOString() }).toEqual({
                expression,
                zone,
                after: new Date(cursor).toISOString(),
                next: ((reference) => (reference === null ? null : new Date(reference).toISOString()))(schedule.nextByScan(cursor)),
              });
              if (next === null) break;
              // The rule, read apart from the implementation: a pinned hour runs at the first of a repeated wall time.
              if (shape.hour === 'pinned') {
                for (const earlier of [30 * MINUTE, HOUR, 2 * HOUR]) expect(wallOf(zone, next - earlier)).not.toBe(wallOf(zone, next));
              }
              cursor = next;
            }
          },
        ),
        { numRuns: RUNS_PER_ZONE },
      );
    }
    process.stdout.write(`${zonesWithChanges.length} zones × ${RUNS_PER_ZONE} runs in ${Math.round(performance.now() - started)} ms\n`);
  });
});
