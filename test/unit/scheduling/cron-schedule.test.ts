import fc from 'fast-check';
import { CronSchedule, IntervalSchedule } from '../../../src/features/scheduling/schedule/due-schedule';

const runsBetween = (schedule: { next(after: number): number | null }, from: string, to: string): string[] => {
  const out: string[] = [];
  let cursor = Date.parse(from) - 1;
  for (;;) {
    const next = schedule.next(cursor);
    if (next === null || next >= Date.parse(to)) return out;
    out.push(new Date(next).toISOString());
    cursor = next;
  }
};

/** Paris wall time of an instant, read with Intl independently of the implementation. */
const parisTime = (iso: string) =>
  new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', hourCycle: 'h23', hour: '2-digit', minute: '2-digit', day: '2-digit', month: '2-digit' }).format(
    new Date(iso),
  );

/** Instants at which Paris's local date is `day` (YYYY-MM-DD), found by stepping a UTC minute at a time. */
const parisDayBounds = (day: string): [string, string] => {
  const dateOf = (ms: number) => new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Paris' }).format(new Date(ms));
  let start = Date.parse(`${day}T00:00:00Z`) - 3 * 3_600_000;
  while (dateOf(start) !== day) start += 60_000;
  let end = start;
  while (dateOf(end) === day) end += 60_000;
  return [new Date(start).toISOString(), new Date(end).toISOString()];
};

describe('cron on a time zone, with the DST rule', () => {
  const pinned = new CronSchedule('30 2 * * *', 'Europe/Paris');
  const hourly = new CronSchedule('0 * * * *', 'Europe/Paris');

  it('clocks set forward: a pinned local time that does not exist gives no run that day', () => {
    expect(runsBetween(pinned, '2026-03-28T00:00:00Z', '2026-03-30T12:00:00Z')).toEqual(['2026-03-28T01:30:00.000Z', '2026-03-30T00:30:00.000Z']);
  });

  it('clocks set back: a pinned local time runs once, the first time', () => {
    expect(runsBetween(pinned, '2026-10-24T12:00:00Z', '2026-10-25T12:00:00Z')).toEqual(['2026-10-25T00:30:00.000Z']);
    expect(parisTime('2026-10-25T00:30:00.000Z')).toContain('02:30');
    expect(parisTime('2026-10-25T01:30:00.000Z')).toContain('02:30'); // the repeated one, not run
  });

  it('a job of every hour keeps its rhythm: 25 runs on the day clocks go back, 23 when they go forward', () => {
    expect(runsBetween(hourly, '2026-10-24T23:30:00Z', '2026-10-25T01:30:00Z')).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-25T01:00:00.000Z']);
    expect(runsBetween(hourly, ...parisDayBounds('2026-10-25'))).toHaveLength(25);
    expect(runsBetween(hourly, ...parisDayBounds('2026-03-29'))).toHaveLength(23);
    expect(runsBetween(hourly, ...parisDayBounds('2026-06-01'))).toHaveLength(24);
  });

  it('every run of a pinned job falls on 02:30 Paris time, once per local day (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.parse('2020-01-01'), max: Date.parse('2035-01-01') }), (start) => {
        const runs = runsBetween(pinned, new Date(start).toISOString(), new Date(start + 10 * 86_400_000).toISOString());
        for (const run of runs) expect(parisTime(run)).toMatch(/02:30$/);
        const days = runs.map((run) => new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Paris' }).format(new Date(run)));
        expect(new Set(days).size).toBe(days.length);
        expect(runs.length).toBeGreaterThanOrEqual(8);
      }),
      { numRuns: 50 },
    );
  });

  it('applies the rule whatever the step from `after`: a long step lands on the first 01:30 of the fall-back day', () => {
    // New York, 2024-11-03: 01:30 EDT (05:30Z), then 01:30 EST (06:30Z). From December 2023 (EST, as
    // that night's second 01:30), the step is eleven months; from the day before, one day.
    const sundaysOfNovember = new CronSchedule('30 1 * 11 0', 'America/New_York');
    expect(sundaysOfNovember.next(Date.parse('2023-12-01T00:00:00Z'))).toBe(Date.parse('2024-11-03T05:30:00Z'));
    expect(sundaysOfNovember.next(Date.parse('2024-11-02T00:00:00Z'))).toBe(Date.parse('2024-11-03T05:30:00Z'));
    expect(sundaysOfNovember.next(Date.parse('2024-11-03T05:30:00Z'))).toBe(Date.parse('2024-11-10T06:30:00Z'));
  });

  it('applies the rule whatever the step from `after`: a long step gives no run at a skipped 02:30', () => {
    // New York, 2024-03-10: 02:30 does not exist. From April 2023 (EDT) the step is eleven months.
    const tenthOfMarch = new CronSchedule('30 2 10 3 *', 'America/New_York');
    expect(tenthOfMarch.next(Date.parse('2023-04-01T00:00:00Z'))).toBe(Date.parse('2025-03-10T06:30:00Z'));
    expect(tenthOfMarch.next(Date.parse('2024-03-09T00:00:00Z'))).toBe(Date.parse('2025-03-10T06:30:00Z'));
  });

  it('is evaluated in UTC by default and on other zones (07:00 Paris is 06:00 UTC in March)', () => {
    expect(runsBetween(new CronSchedule('0 7 * * *', 'Europe/Paris'), '2026-03-02T05:58:00Z', '2026-03-03T00:00:00Z')).toEqual(['2026-03-02T06:00:00.000Z']);
    expect(runsBetween(new CronSchedule('0 7 * * *', 'UTC'), '2026-03-02T05:58:00Z', '2026-03-03T00:00:00Z')).toEqual(['2026-03-02T07:00:00.000Z']);
    expect(runsBetween(new CronSchedule('0 9 * * *', 'America/New_York'), '2026-07-01T00:00:00Z', '2026-07-02T00:00:00Z')).toEqual([
      '2026-07-01T13:00:00.000Z',
    ]);
  });

  it('applies the POSIX rule when both day fields are restricted: either matches', () => {
    // The 13th of each month, and every Friday.
    expect(runsBetween(new CronSchedule('0 0 13 * 5', 'UTC'), '2026-01-01T00:00:00Z', '2026-01-20T00:00:00Z')).toEqual([
      '2026-01-02T00:00:00.000Z',
      '2026-01-09T00:00:00.000Z',
      '2026-01-13T00:00:00.000Z',
      '2026-01-16T00:00:00.000Z',
    ]);
  });

  it('reads month and weekday names, and 7 as Sunday', () => {
    expect(runsBetween(new CronSchedule('0 12 * JAN MON-FRI', 'UTC'), '2026-01-01T00:00:00Z', '2026-01-06T00:00:00Z')).toEqual([
      '2026-01-01T12:00:00.000Z',
      '2026-01-02T12:00:00.000Z',
      '2026-01-05T12:00:00.000Z',
    ]);
    expect(runsBetween(new CronSchedule('0 0 * * 7', 'UTC'), '2026-01-01T00:00:00Z', '2026-01-12T00:00:00Z')).toEqual([
      '2026-01-04T00:00:00.000Z',
      '2026-01-11T00:00:00.000Z',
    ]);
  });

  it('finds 29 February', () => {
    expect(new CronSchedule('0 0 29 2 *', 'UTC').next(Date.parse('2026-01-01T00:00:00Z'))).toBe(Date.parse('2028-02-29T00:00:00Z'));
  });
});

describe('epoch-aligned intervals', () => {
  it('fire when epoch ms % interval = 0, whatever the start', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 * 86_400_000 }), fc.integer({ min: 0, max: 4_000_000_000_000 }), (every, after) => {
        const next = new IntervalSchedule(every).next(after);
        expect(next % every).toBe(0);
        expect(next).toBeGreaterThan(after);
        expect(next - after).toBeLessThanOrEqual(every);
      }),
    );
    expect(runsBetween(new IntervalSchedule(15 * 60_000), '2026-03-02T05:58:13Z', '2026-03-02T07:00:00Z')).toEqual([
      '2026-03-02T06:00:00.000Z',
      '2026-03-02T06:15:00.000Z',
      '2026-03-02T06:30:00.000Z',
      '2026-03-02T06:45:00.000Z',
    ]);
    expect(new IntervalSchedule(420_000).next(Date.parse('2026-03-02T05:58:00Z')) % 420_000).toBe(0);
  });
});
