import type { JobScheduleEngine } from '../../../../src/features/scheduling/job-schedule-engine';
import type { ScheduleSync } from '../../../../src/features/scheduling/dynamic/schedule-sync';
import { type DynamicNode, useDynamicFleet } from './dynamic-nodes';

const fleet = useDynamicFleet();

/** The instance's change sync and engine (internals: what they read and keep is the subject here). */
const syncOf = (node: DynamicNode): ScheduleSync => node.schedules['sync'];
const engineOf = (node: DynamicNode): JobScheduleEngine => node.schedules['engine'];

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
