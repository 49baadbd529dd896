import { DeclarationError } from '../../../src/features';
import { checkScheduleInput, type DeclarationMemo, declarationOfSchedule } from '../../../src/features/scheduling/dynamic/dynamic-schedule-input';
import type { ScheduleRow } from '../../../src/features/scheduling/dynamic/dynamic-schedule.sql';
import { occurrenceOfRunKey, runKeyOf, scheduleRunKeyPrefix } from '../../../src/features/scheduling/occurrence/occurrence-keys';

const known = (name: string) => name === 'reports.tenant-report';
const row = (overrides: Partial<ScheduleRow>): ScheduleRow => ({
  id: 'tenant-42/report',
  handler: 'reports.tenant-report',
  cron: null,
  everyMs: null,
  timeZone: null,
  data: null,
  tenantId: null,
  enabled: true,
  overlap: 'skip',
  missed: 'drop',
  timeoutMs: null,
  leaseMs: null,
  ...overrides,
});
const iso = (instant: number | null) => (instant === null ? null : new Date(instant).toISOString());

describe('a dynamic schedule', () => {
  it('follows its own time zone across DST changes, by the same rule as declared jobs', () => {
    const { schedule } = declarationOfSchedule(row({ cron: '30 2 * * *', timeZone: 'America/New_York' }));
    // 2027-03-14: 02:30 does not exist in New York (clocks jump 02:00 → 03:00): no run that day.
    expect(iso(schedule.next(Date.parse('2027-03-13T12:00:00Z')))).toBe('2027-03-15T06:30:00.000Z');
    expect(iso(schedule.next(Date.parse('2027-03-12T12:00:00Z')))).toBe('2027-03-13T07:30:00.000Z');
    const { schedule: early } = declarationOfSchedule(row({ cron: '30 1 * * *', timeZone: 'America/New_York' }));
    // 2027-11-07: 01:30 happens twice (EDT, then EST): it runs once, the first time.
    expect(iso(early.next(Date.parse('2027-11-07T04:00:00Z')))).toBe('2027-11-07T05:30:00.000Z');
    expect(iso(early.next(Date.parse('2027-11-07T05:30:00Z')))).toBe('2027-11-08T06:30:00.000Z');
  });

  it('is checked like a declaration, and its row carries the normalized definition', () => {
    const { row: stored, declaration } = checkScheduleInput(
      { id: 'tenant-42/report', handler: 'reports.tenant-report', every: '5m', data: { to: 'ops@example.com' }, tenantId: '42', timeoutMs: 30_000 },
      known,
    );
    expect(stored).toMatchObject({
      everyMs: 300_000,
      cron: null,
      timeZone: null,
      tenantId: '42',
      enabled: true,
      overlap: 'skip',
      missed: 'drop',
      timeoutMs: 30_000,
      leaseMs: null,
    });
    expect(declaration.dynamicSchedule).toEqual({ id: 'tenant-42/report', data: { to: 'ops@example.com' }, tenantId: '42' });
    expect(checkScheduleInput({ id: 'x', handler: 'reports.tenant-report', cron: ' 0 8 * * 1 ' }, known).row).toMatchObject({
      cron: '0 8 * * 1',
      timeZone: 'UTC',
    });
    expect(() => checkScheduleInput({ id: 'x', handler: 'reports.tenant-report', cron: '0 8 * * 1', timeZone: 'Nowhere/City' }, known)).toThrow(
      DeclarationError,
    );
    expect(() => checkScheduleInput({ id: 'x', handler: 'reports.other', every: '1m' }, known)).toThrow(/no @ScheduleHandler\('reports.other'\)/);
  });

  it('refuses an interval past 8 years, naming the schedule', () => {
    expect(checkScheduleInput({ id: 'x', handler: 'reports.tenant-report', every: '2928d' }, known).row).toMatchObject({ everyMs: 2928 * 86_400_000 });
    const refused = () => checkScheduleInput({ id: 'tenant-7/forever', handler: 'reports.tenant-report', every: Number.MAX_SAFE_INTEGER }, known);
    expect(refused).toThrow(DeclarationError);
    expect(refused).toThrow(
      'Scheduled job "tenant-7/forever": "every" must be at most 2928d (8 years, 252979200000 ms: a cron must fire within that too), got 9007199254740991',
    );
    // A row stored before the bound is no longer run (the sync logs why and leaves it).
    expect(() => declarationOfSchedule(row({ everyMs: String(Number.MAX_SAFE_INTEGER) }))).toThrow(/"every" must be at most 2928d/);
  });

  it('keys its occurrences by its id, which no other id can share, and reads them back', () => {
    const ids = ['a', 'a b', 'a%20b', 'a ', 'ü/ß', 'a\tb'];
    const keys = ids.map((id) => runKeyOf({ scheduleId: id }, Date.UTC(2027, 0, 1)));
    expect(new Set(keys).size).toBe(ids.length);
    for (const [index, id] of ids.entries()) {
      expect(occurrenceOfRunKey(keys[index])).toEqual({ scheduledAt: Date.UTC(2027, 0, 1), scheduleId: id });
      // One schedule's keys are one range: no other id's key starts with its prefix.
      for (const other of keys.filter((_, otherIndex) => otherIndex !== index)) expect(other.startsWith(scheduleRunKeyPrefix(id))).toBe(false);
    }
    expect(runKeyOf({ scheduleId: 'a b' }, 0, undefined, { correlationId: 'c' })).toBe('run-now 1970-01-01T00:00:00.000Z c schedule=a%20b');
  });

  it('read many at once, shares one checked declaration per shape, never across shapes, and never remembers a failure', () => {
    const memo: DeclarationMemo = new Map();
    const first = declarationOfSchedule(row({ id: 'a', everyMs: '60000', tenantId: '1', data: { n: 1 } }), memo);
    const second = declarationOfSchedule(row({ id: 'b', everyMs: '60000', tenantId: '2', data: { n: 2 } }), memo);
    expect(second.schedule).toBe(first.schedule);
    expect(first.dynamicSchedule).toEqual({ id: 'a', data: { n: 1 }, tenantId: '1' });
    expect(second.dynamicSchedule).toEqual({ id: 'b', data: { n: 2 }, tenantId: '2' });
    // Any field of the shape apart: its own declaration, as without the memo.
    const shapes: Array<Partial<ScheduleRow>> = [
      { everyMs: '30000' },
      { handler: 'reports.other-report' },
      { overlap: 'queue' },
      { missed: 'run-once' },
      { timeoutMs: 5_000 },
      { leaseMs: 9_000 },
      { everyMs: null, cron: '* * * * *' },
      { everyMs: null, cron: '* * * * *', timeZone: 'Europe/Paris' },
    ];
    for (const shape of shapes) {
      const declared = declarationOfSchedule(row({ id: 'c', everyMs: '60000', ...shape }), memo);
      expect(declared).toEqual(declarationOfSchedule(row({ id: 'c', everyMs: '60000', ...shape })));
      expect(declared.schedule).not.toBe(first.schedule);
    }
    // An invalid row throws each time (nothing kept for it).
    for (let attempt = 0; attempt < 2; attempt++) {
      expect(() => declarationOfSchedule(row({ id: 'd', everyMs: String(Number.MAX_SAFE_INTEGER) }), memo)).toThrow(DeclarationError);
    }
  });
});
