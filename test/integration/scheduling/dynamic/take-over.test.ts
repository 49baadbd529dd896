import { JobSchedulerService } from '../../../../src/features';
import type { JobAcquiredLease } from '../../../../src/features/job-scheduler/job-scheduler.types';
import { sleep } from '../../../support/lease-nodes';
import { calls, eventually, useDynamicFleet } from './dynamic-nodes';

const fleet = useDynamicFleet();
const HANDLER = 'reports.tenant-report';
const today = () => new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000).toISOString();
const keyOf = (scheduleId: string, at: string) => `schedule=${encodeURIComponent(scheduleId)} ${at}`;

/** Another instance's claims of these schedules' occurrences (lease 2 s), as it would hold them. */
const claim = async (lease: JobSchedulerService, scheduleIds: string[], at: string): Promise<JobAcquiredLease[]> => {
  const results = await lease.acquireMany(scheduleIds.map((id) => ({ code: HANDLER, runKey: keyOf(id, at), leaseMs: 2_000 })));
  return results.map((result) => {
    if (!result.acquired) throw new Error('already claimed');
    return result;
  });
};

describe('take-over of dynamic schedules', () => {
  it('ends the abandoned occurrences of removed schedules (JOB_SCHEDULE_REMOVED), which no longer keep the others from being taken over', async () => {
    const at = today();
    const lease = new JobSchedulerService(await fleet.database.dataSource({ poolSize: 1 }), { nodeId: 'gone' });
    // The oldest expired rows: occurrences of 150 schedules removed since (100 handed over on a
    // shutdown, 50 whose holder crashed), and one of a paused schedule.
    const removed = Array.from({ length: 150 }, (_, index) => `removed-${index}`);
    const removedLocks = await claim(lease, removed, at);
    expect((await lease.expireMany(removedLocks.slice(0, 100))).every(Boolean)).toBe(true);
    await claim(lease, ['paused'], at);
    await sleep(2_100);

    const a = await fleet.start('a', { takeOverScanMs: 300 });
    await a.schedules.upsert({ id: 'live', handler: HANDLER, every: '1d' });
    await a.schedules.upsert({ id: 'paused', handler: HANDLER, every: '1d', enabled: false });
    // Then an occurrence of a live schedule, handed over: taken over, not starved by the others.
    const [live] = await claim(lease, ['live'], at);
    await lease.expireMany([live]);

    await eventually(() => calls.some((call) => call.scheduleId === 'live'), 10_000, 'the take-over of the live schedule');
    await eventually(() => a.schedules.runs.filter((run) => run.errorCode === 'JOB_SCHEDULE_REMOVED').length === 150, 10_000, 'the removed schedules ended');
    await a.schedules.idle();

    expect(calls.map((call) => [call.scheduleId, call.execution.trigger])).toEqual([['live', 'take-over']]);
    const ended = a.schedules.runs.filter((run) => run.errorCode === 'JOB_SCHEDULE_REMOVED');
    expect(new Set(ended.map((run) => run.scheduleId))).toEqual(new Set(removed));
    expect(ended[0]).toMatchObject({ name: HANDLER, outcome: 'abandoned', trigger: 'take-over', scheduledAt: new Date(at) });
    expect(String((ended[0].error as Error).message)).toContain('was removed');
    const rows = await fleet.database.sql<{ runKey: string; status: string; code: string | null }>(
      `SELECT "runKey", status::text AS status, data->'error'->>'code' AS code FROM "job-scheduler" ORDER BY "runKey"`,
    );
    expect(rows.filter((row) => row.runKey.startsWith('schedule=removed-')).every((row) => row.status === 'FAIL' && row.code === 'JOB_SCHEDULE_REMOVED')).toBe(
      true,
    );
    expect(rows.find((row) => row.runKey === keyOf('live', at))).toMatchObject({ status: 'SUCCESS' });
    // A paused schedule's occurrence waits for the schedule to run somewhere again: still RUNNING, untouched.
    expect(rows.find((row) => row.runKey === keyOf('paused', at))).toMatchObject({ status: 'RUNNING', code: null });
  });
});
