import type { DynamicScheduleView } from '../../../../src/features';
import type { JobScheduleEngine } from '../../../../src/features/scheduling/job-schedule-engine';
import type { ScheduleSync } from '../../../../src/features/scheduling/dynamic/schedule-sync';
import type { StoredScheduleRow } from '../../../../src/features/scheduling/dynamic/dynamic-schedule.sql';
import { type DynamicNode, useDynamicFleet } from './dynamic-nodes';

const fleet = useDynamicFleet();

/** The instance's change sync and engine (internals: what it remembers is the subject here). */
const syncOf = (node: DynamicNode): ScheduleSync => node.schedules['sync'];
const engineOf = (node: DynamicNode): JobScheduleEngine => node.schedules['engine'];

const LIVE = 20;
const CHURNED = 3_000;
/** Writes in flight at once (the pool has 5 connections; writes are serialized by the table's lock anyway). */
const IN_FLIGHT = 20;

const inBatches = async (count: number, each: (index: number) => Promise<unknown>): Promise<void> => {
  for (let from = 0; from < count; from += IN_FLIGHT) {
    await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, count - from) }, (_, offset) => each(from + offset)));
  }
};

describe('the change poll', () => {
  it('reads changes in version order, across a power of ten (bigint order, not text order)', async () => {
    const a = await fleet.start('a', { changePollMs: 60_000 });
    const b = await fleet.start('b', { changePollMs: 60_000 });
    // The next versions cross a power of ten: 5 below it, 5 from it (…99995 to …100004 in text: 100000 first).
    await fleet.database.sql(`SELECT setval('"job-schedule_version_seq"', (10 ^ ceil(log(last_value + 10)))::bigint - 6) FROM "job-schedule_version_seq"`);
    const ids = Array.from({ length: 10 }, (_, index) => `ordered-${index}`);
    for (const id of ids) await a.schedules.upsert({ id, handler: 'reports.tenant-report', every: '1h' });
    const rows = await syncOf(b)['store'].changesSince('0', 100);
    const versions = rows.map((row) => BigInt(row.version));
    expect(String(versions[versions.length - 1]).length).toBe(String(versions[0]).length + 1);
    expect(versions).toEqual([...versions].sort((x, y) => (x < y ? -1 : 1)));
    await b.schedules.refresh();
    expect(engineOf(b).jobNames.sort()).toEqual(ids);
  });
});

describe('what an instance remembers of dynamic schedules', () => {
  it('is the live schedules: thousands created and removed are forgotten once the polls have read past their removal', async () => {
    // Long change polls: each instance reads when told (refresh), so the test decides when.
    const a = await fleet.start('a', { changePollMs: 60_000 });
    const b = await fleet.start('b', { changePollMs: 60_000 });
    const input = (id: string) => ({ id, handler: 'reports.tenant-report', every: '1h' });
    await inBatches(LIVE, (index) => a.schedules.upsert(input(`live-${index}`)));
    const firstStates = new Map<string, DynamicScheduleView>();
    const started = performance.now();
    await inBatches(CHURNED, async (index) => {
      firstStates.set(`churn-${index}`, await a.schedules.upsert(input(`churn-${index}`)));
      expect(await a.schedules.remove(`churn-${index}`)).toBe(true);
    });
    const churnMs = performance.now() - started;
    // a applied its own writes at once; b reads them all (the removals, as tombstones) in one poll.
    await Promise.all([a.schedules.refresh(), b.schedules.refresh()]);
    process.stdout.write(
      `churned ${CHURNED} schedules in ${Math.round(churnMs)} ms; kept: a ${syncOf(a).trackedCount}, b ${syncOf(b).trackedCount} (live ${LIVE})\n`,
    );
    expect(syncOf(a).trackedCount).toBe(LIVE);
    expect(syncOf(b).trackedCount).toBe(LIVE);
    expect(engineOf(a).jobNames.sort()).toEqual(engineOf(b).jobNames.sort());
    expect(engineOf(b).jobNames).toHaveLength(LIVE);

    // What the removed ids' entries were for still holds: an older state of one (a poll or a local
    // write's apply arriving late) does not bring it back ...
    const stale = firstStates.get('churn-7') as DynamicScheduleView;
    const staleRow = {
      ...stale,
      everyMs: 3_600_000,
      cron: null,
      timeZone: null,
      tenantId: null,
      timeoutMs: null,
      leaseMs: null,
      version: String(stale.version),
      removed: false,
    } as StoredScheduleRow;
    for (const node of [a, b]) {
      expect(await syncOf(node).apply(staleRow)).toBe(false);
      expect(engineOf(node).job('churn-7')).toBeUndefined();
    }
    // ... while the id written again is a new change, run on both.
    await a.schedules.upsert(input('churn-7'));
    await b.schedules.refresh();
    for (const node of [a, b]) {
      expect(engineOf(node).job('churn-7')).toBeDefined();
      expect(syncOf(node).trackedCount).toBe(LIVE + 1);
    }
  }, 120_000);

  it('keeps a removal until the polls have read past it: a poll behind it does not bring the schedule back', async () => {
    const a = await fleet.start('a', { changePollMs: 60_000 });
    const b = await fleet.start('b', { changePollMs: 60_000 });
    const written = await a.schedules.upsert({ id: 'short-lived', handler: 'reports.tenant-report', every: '1h' });
    await b.schedules.refresh();
    // b removes it; its own apply is at once, its polls have not read the removal yet.
    expect(await b.schedules.remove('short-lived')).toBe(true);
    expect(syncOf(b).trackedCount).toBe(1);
    const stale = {
      ...written,
      everyMs: 3_600_000,
      cron: null,
      timeZone: null,
      tenantId: null,
      timeoutMs: null,
      leaseMs: null,
      version: String(written.version),
      removed: false,
    } as StoredScheduleRow;
    expect(await syncOf(b).apply(stale)).toBe(false);
    expect(engineOf(b).job('short-lived')).toBeUndefined();
    await b.schedules.refresh();
    expect(syncOf(b).trackedCount).toBe(0);
  });
});
