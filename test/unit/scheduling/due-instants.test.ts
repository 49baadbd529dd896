import { MAX_DUE_WALK, MAX_MISSED_RECORDS, dueCountSince, dueInstantsSince } from '../../../src/features/scheduling/schedule/due-instants';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { IntervalSchedule } from '../../../src/features/scheduling/schedule/due-schedule';

const DAY = 86_400_000;
/** Counts the calls of next(): the cost of a walk. */
const counted = (options: Parameters<typeof checkJobDeclaration>[1]) => {
  const { schedule } = checkJobDeclaration('reports.walk', options);
  let calls = 0;
  return { calls: () => calls, schedule: { description: schedule.description, next: (after: number) => (calls++, schedule.next(after)) } };
};

describe('dueInstantsSince', () => {
  it('lists a short span exactly: the latest, the ones before it, their count', () => {
    const { schedule } = counted({ every: '1m' });
    expect(dueInstantsSince(schedule, 0, 5 * 60_000 + 30_000)).toEqual({ latest: 5 * 60_000, earlier: [60_000, 120_000, 180_000, 240_000], count: 5 });
  });

  it('costs a bounded number of steps after a week of a job due every second, keeping the latest instants exact', () => {
    const walk = counted({ every: '1s' });
    const until = 8 * DAY + 500;
    const due = dueInstantsSince(walk.schedule, DAY, until);
    expect(walk.calls()).toBeLessThan(3 * MAX_DUE_WALK);
    expect(due.latest).toBe(8 * DAY);
    expect(due.earlier).toHaveLength(MAX_MISSED_RECORDS);
    expect(due.earlier[MAX_MISSED_RECORDS - 1]).toBe(8 * DAY - 1_000);
    expect(due.earlier[0]).toBe(8 * DAY - MAX_MISSED_RECORDS * 1_000);
    // 7 days of seconds, estimated from the period: within one instant.
    expect(Math.abs(due.count - 7 * 86_400)).toBeLessThanOrEqual(1);
  });

  it('keeps the latest instants exact for an irregular cron (weekdays, working hours) over a year', () => {
    const walk = counted({ cron: '*/5 9-17 * * 1-5', timeZone: 'Europe/Paris' });
    const from = Date.UTC(2026, 0, 1);
    const until = Date.UTC(2027, 0, 1);
    const due = dueInstantsSince(walk.schedule, from, until);
    expect(walk.calls()).toBeLessThan(20 * MAX_DUE_WALK);
    // The exact latest, and the exact listed ones before it (a plain walk of the last days agrees).
    const exact = dueInstantsSince(walk.schedule, until - 5 * DAY, until);
    expect(due.latest).toBe(exact.latest);
    expect(due.earlier.slice(-50)).toEqual(exact.earlier.slice(-50));
    expect(due.count).toBeGreaterThan(20_000);
  });
});

describe('dueCountSince', () => {
  const everyMinute = new IntervalSchedule(60_000);
  const t0 = Date.UTC(2026, 0, 1);

  it('counts the instants in (after, now], up to the cap', () => {
    expect(dueCountSince(everyMinute, t0, t0, 3)).toBe(0);
    expect(dueCountSince(everyMinute, t0, t0 + 60_000, 3)).toBe(1);
    expect(dueCountSince(everyMinute, t0 + 1, t0 + 120_000, 3)).toBe(2);
    expect(dueCountSince(everyMinute, t0, t0 + 3_600_000, 3)).toBe(3);
    expect(dueCountSince(everyMinute, t0, t0 + 3_600_000, 2)).toBe(2);
  });

  it('stops where the schedule has no next instant', () => {
    expect(dueCountSince({ next: () => null, description: 'never' }, t0, t0 + 3_600_000, 3)).toBe(0);
  });
});
