import { createRequire } from 'node:module';
import fc from 'fast-check';
import { cronTicks, dependsOnTimeZone } from '../../../src/features/integrations/nest-schedule/cron-ticks';
import {
  EARLY_TICK_FRACTION,
  EARLY_TICK_TOLERANCE_MS,
  latestDueAtOrBefore,
  occurrenceOfTick,
  type TickSchedule,
} from '../../../src/features/integrations/nest-schedule/tick-occurrence';

/** The `cron` package @nestjs/schedule arms its timers with. */
const { CronTime } = createRequire(require.resolve('@nestjs/schedule'))('cron') as {
  CronTime: new (source: string, timeZone?: string | null, utcOffset?: number | null) => { sendAt(count: number): { toMillis(): number }[] };
};

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const ticks = (cronTime: string, zone: { timeZone?: string; utcOffset?: number } = { timeZone: 'UTC' }): TickSchedule =>
  cronTicks('Test.method', { cronTime, ...zone });

/** The instants a schedule names in [from, to). */
const dueBetween = (schedule: TickSchedule, from: string, to: string): string[] => {
  const out: string[] = [];
  let cursor = at(from) - 1;
  for (;;) {
    const next = schedule.next(cursor);
    if (next === null || next >= at(to)) return out;
    out.push(new Date(next).toISOString());
    cursor = next;
  }
};

describe('the tick of a six-field cron (seconds first)', () => {
  const everyTwoSeconds = ticks('*/2 * * * * *');
  const due = at('2026-07-20T03:00:10.000Z');

  it('on time, late or slightly early, maps to its due instant', () => {
    for (const firedAt of [due, due + 3, due + 250, due + 1_700, due - 5, due - 199]) {
      expect(iso(occurrenceOfTick(everyTwoSeconds, firedAt))).toBe('2026-07-20T03:00:10.000Z');
    }
  });

  it('early by more than a tenth of its 2 s gap: read as a late tick of the instant before', () => {
    expect(iso(occurrenceOfTick(everyTwoSeconds, due - 201))).toBe('2026-07-20T03:00:08.000Z');
  });

  it('late by a whole gap or more: the latest due instant (the timer skipped the ones between)', () => {
    expect(iso(occurrenceOfTick(everyTwoSeconds, due + 2_000))).toBe('2026-07-20T03:00:12.000Z');
    expect(iso(occurrenceOfTick(everyTwoSeconds, due + 9_500))).toBe('2026-07-20T03:00:18.000Z');
  });

  it('reads seconds lists and ranges as cron does', () => {
    expect(dueBetween(ticks('5,35 10-11 * * * *'), '2026-07-20T03:10:00Z', '2026-07-20T03:12:00Z')).toEqual([
      '2026-07-20T03:10:05.000Z',
      '2026-07-20T03:10:35.000Z',
      '2026-07-20T03:11:05.000Z',
      '2026-07-20T03:11:35.000Z',
    ]);
  });

  it('a five-field cron is at second 0', () => {
    expect(iso(occurrenceOfTick(ticks('*/5 * * * *'), at('2026-07-20T03:05:00.420Z')))).toBe('2026-07-20T03:05:00.000Z');
  });

  it('the early tolerance is at most 1 s, however sparse the cron', () => {
    const hourly = ticks('0 0 * * * *');
    expect(iso(occurrenceOfTick(hourly, at('2026-07-20T04:00:00Z') - EARLY_TICK_TOLERANCE_MS))).toBe('2026-07-20T04:00:00.000Z');
    expect(iso(occurrenceOfTick(hourly, at('2026-07-20T04:00:00Z') - EARLY_TICK_TOLERANCE_MS - 1))).toBe('2026-07-20T03:00:00.000Z');
  });
});

describe('every tick the timer fires maps to the instant it was due', () => {
  const cases: { cronTime: string; zone: { timeZone?: string; utcOffset?: number }; from: string }[] = [
    { cronTime: '*/2 * * * * *', zone: { timeZone: 'UTC' }, from: '2026-07-20T03:00:00Z' },
    { cronTime: '* * * * * *', zone: { timeZone: 'UTC' }, from: '2026-07-20T03:00:00Z' },
    { cronTime: '0 */5 * * * *', zone: { timeZone: 'Europe/Paris' }, from: '2026-03-29T00:40:00Z' },
    { cronTime: '0 * * * *', zone: { timeZone: 'Europe/Paris' }, from: '2026-10-24T22:00:00Z' },
    { cronTime: '30 2 * * *', zone: { timeZone: 'Europe/Paris' }, from: '2026-03-27T00:00:00Z' },
    { cronTime: '0 30 1 * * *', zone: { timeZone: 'America/New_York' }, from: '2026-11-01T04:00:00Z' },
    { cronTime: '0 0 9 * * 1-5', zone: { utcOffset: 330 }, from: '2026-07-17T00:00:00Z' },
    { cronTime: '0 0 0 1 * *', zone: { timeZone: 'Australia/Sydney' }, from: '2026-03-01T00:00:00Z' },
  ];

  it.each(cases)('$cronTime in $zone, late by up to 9/10 of the gap or early by up to its tolerance', ({ cronTime, zone, from }) => {
    const schedule = ticks(cronTime, zone);
    // The due instants, as the timer computes them: each from the one before.
    const dues: number[] = [];
    let cursor = at(from);
    while (dues.length < 12) {
      cursor = schedule.next(cursor) as number;
      dues.push(cursor);
    }
    fc.assert(
      // fraction < 0: early by that fraction of the early tolerance; >= 0: late by that fraction of the gap to the next instant.
      fc.property(fc.integer({ min: 1, max: dues.length - 2 }), fc.double({ min: -1, max: 0.899, noNaN: true }), (index, fraction) => {
        const earlyTolerance = Math.min(EARLY_TICK_TOLERANCE_MS, (dues[index] - dues[index - 1]) * EARLY_TICK_FRACTION);
        const offset = fraction < 0 ? fraction * earlyTolerance : fraction * (dues[index + 1] - dues[index]);
        expect(occurrenceOfTick(schedule, dues[index] + Math.trunc(offset))).toBe(dues[index]);
      }),
      { numRuns: 100 },
    );
  });
});

describe('time zones, utcOffset and DST, as @nestjs/schedule fires them', () => {
  it('clocks set forward: a pinned time that does not exist fires at the change, and that tick is named by it', () => {
    const pinned = ticks('30 2 * * *', { timeZone: 'Europe/Paris' });
    expect(dueBetween(pinned, '2026-03-28T00:00:00Z', '2026-03-30T12:00:00Z')).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z', // 03:00 CEST: cron fires the missing 02:30 at the change
      '2026-03-30T00:30:00.000Z',
    ]);
    expect(iso(occurrenceOfTick(pinned, at('2026-03-29T01:00:00.040Z')))).toBe('2026-03-29T01:00:00.000Z');
  });

  it('clocks set back: every hour runs through the repeated hour twice, as two distinct ticks', () => {
    const hourly = ticks('0 0 * * * *', { timeZone: 'Europe/Paris' });
    const first = occurrenceOfTick(hourly, at('2026-10-25T00:00:00.030Z')); // 02:00 CEST
    const second = occurrenceOfTick(hourly, at('2026-10-25T01:00:00.030Z')); // 02:00 CET
    expect([iso(first), iso(second)]).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-25T01:00:00.000Z']);
  });

  it('clocks set back: a pinned time runs once, the first time', () => {
    expect(dueBetween(ticks('0 30 2 * * *', { timeZone: 'Europe/Paris' }), '2026-10-24T12:00:00Z', '2026-10-26T12:00:00Z')).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('utcOffset is in minutes, as @nestjs/schedule passes it to cron', () => {
    expect(dueBetween(ticks('0 0 9 * * *', { utcOffset: 330 }), '2026-03-08T00:00:00Z', '2026-03-10T00:00:00Z')).toEqual([
      '2026-03-08T03:30:00.000Z',
      '2026-03-09T03:30:00.000Z',
    ]);
    expect(dueBetween(ticks('0 0 9 * * *', { utcOffset: -90 }), '2026-03-08T00:00:00Z', '2026-03-09T00:00:00Z')).toEqual(['2026-03-08T10:30:00.000Z']);
  });

  it('names the same instants as the timer of cron itself (sendAt), zone by zone', () => {
    const settings: [string, string | null, number | null][] = [
      ['*/2 * * * * *', 'UTC', null],
      ['0 7 * * 1-5', 'Europe/Paris', null],
      ['15 */3 * * *', 'America/New_York', null],
      ['0 0 9 * * *', null, 330],
      ['0 45 23 * * *', null, -480],
      ['0 0 12 * * *', null, null],
    ];
    for (const [cronTime, timeZone, utcOffset] of settings) {
      const now = Date.now();
      const expected = new CronTime(cronTime, timeZone, utcOffset).sendAt(4).map((date) => date.toMillis());
      const schedule = cronTicks('Test.method', { cronTime, timeZone: timeZone ?? undefined, utcOffset: utcOffset ?? undefined });
      const ours: number[] = [];
      let cursor = now;
      while (ours.length < 4) ours.push((cursor = schedule.next(cursor) as number));
      // sendAt reads the clock a moment later: equal unless a due instant fell in between.
      if (ours[0] !== expected[0]) expect(ours.slice(1)).toEqual(expected.slice(0, 3));
      else expect(ours).toEqual(expected);
    }
  });

  it('a @Cron with a Date fires once: its tick is that instant', () => {
    const once = cronTicks('Test.method', { cronTime: new Date('2026-07-20T03:00:00.250Z') });
    expect(iso(occurrenceOfTick(once, at('2026-07-20T03:00:00.260Z')))).toBe('2026-07-20T03:00:00.250Z');
    expect(iso(occurrenceOfTick(once, at('2026-07-20T03:00:07Z')))).toBe('2026-07-20T03:00:00.250Z');
    expect(iso(occurrenceOfTick(once, at('2026-07-20T02:59:00Z')))).toBeNull();
  });

  it('tells which expressions depend on the zone they are read in', () => {
    const now = at('2026-07-20T03:00:00Z');
    expect(dependsOnTimeZone('Test.method', '*/2 * * * * *', now)).toBe(false);
    expect(dependsOnTimeZone('Test.method', '0 */15 * * * *', now)).toBe(false);
    expect(dependsOnTimeZone('Test.method', '0 3 * * *', now)).toBe(true);
    expect(dependsOnTimeZone('Test.method', '0 0 * * * *', now)).toBe(true); // a half-hour zone
  });

  it('refuses what cron refuses, naming the method', () => {
    expect(() => cronTicks('Orders.sync', { cronTime: '61 * * * * *' })).toThrow(
      expect.objectContaining({
        code: 'INVALID_CRON',
        method: 'Orders.sync',
        message: expect.stringContaining('@RunOnce on Orders.sync: @nestjs/schedule cannot read its @Cron'),
      }),
    );
    expect(() => cronTicks('Orders.sync', { cronTime: '* * * * *', timeZone: 'Mars/Olympus' })).toThrow(expect.objectContaining({ code: 'INVALID_CRON' }));
  });
});

describe('latestDueAtOrBefore', () => {
  it('finds a sparse instant far back, and nothing before a fixed one', () => {
    expect(iso(latestDueAtOrBefore(ticks('0 0 0 29 2 *'), at('2027-06-01T00:00:00Z')))).toBe('2024-02-29T00:00:00.000Z');
    expect(latestDueAtOrBefore({ description: 'never', next: () => null }, at('2027-06-01T00:00:00Z'))).toBeNull();
  });
});
