import { resolveJobIdentity } from '../../../../src/features/job-scheduler/job-identity';
import { sleep } from '../../../support/lease-nodes';
import { calls, eventually, useDynamicFleet } from './dynamic-nodes';

const fleet = useDynamicFleet();
const { nodes, start, stop } = fleet;

/** Sleeps until `offsetMs` past the next multiple of `everyMs`. */
const untilPast = async (everyMs: number, offsetMs: number): Promise<number> => {
  const boundary = Math.ceil(Date.now() / everyMs) * everyMs;
  await sleep(boundary + offsetMs - Date.now());
  return boundary;
};

describe('dynamic schedules over restarts and changes', () => {
  it('survive a restart of every instance; what passed meanwhile is missed, or run once with missed: run-once', async () => {
    const first = await start('first', { lateToleranceMs: 300 });
    await first.schedules.upsert({ id: 'drop-me', handler: 'reports.tenant-report', every: '4s' });
    await first.schedules.upsert({ id: 'catch-me', handler: 'reports.tenant-report', every: '4s', missed: 'run-once' });
    await eventually(() => new Set(calls.map((call) => call.scheduleId)).size === 2, 10_000, 'both schedules to run');
    await stop(first);
    const ranBefore = calls.length;

    // Down across at least one due instant; back 1 s after another (late by the 300 ms tolerance, the next 3 s away).
    await sleep(4_000);
    await untilPast(4_000, 1_000);
    const second = await start('second', { lateToleranceMs: 300 });
    expect((await second.schedules.list()).schedules.map((view) => view.id)).toEqual(['catch-me', 'drop-me']);
    await eventually(() => second.schedules.runs.some((run) => run.scheduleId === 'drop-me' && run.outcome === 'missed'), 5_000, 'the missed record');
    await second.schedules.idle();
    const caughtUp = calls.slice(ranBefore).filter((call) => call.execution.trigger === 'catch-up');
    expect(caughtUp.map((call) => call.scheduleId)).toEqual(['catch-me']);
    expect(calls.slice(ranBefore).some((call) => call.scheduleId === 'drop-me' && call.execution.trigger !== 'schedule')).toBe(false);
    // And both go on by their schedule.
    await eventually(
      () => calls.slice(ranBefore).filter((call) => call.execution.trigger === 'schedule').length >= 2,
      10_000,
      'scheduled runs after the restart',
    );
  });

  it('a disabled schedule runs nowhere; enabled again it does not replay what passed, unless missed: run-once', async () => {
    const a = await start('a', { lateToleranceMs: 300 });
    const b = await start('b', { lateToleranceMs: 300 });
    await a.schedules.upsert({ id: 'paused', handler: 'integrations.poll', every: '1s' });
    await a.schedules.upsert({ id: 'paused-catch', handler: 'integrations.poll', every: '1s', missed: 'run-once' });
    await eventually(() => new Set(calls.map((call) => call.scheduleId)).size === 2, 10_000, 'both schedules to run');
    await a.schedules.upsert({ id: 'paused', handler: 'integrations.poll', every: '1s', enabled: false });
    await a.schedules.upsert({ id: 'paused-catch', handler: 'integrations.poll', every: '1s', enabled: false, missed: 'run-once' });
    // Within the change poll no instance starts another.
    await sleep(800);
    await Promise.all(nodes.map((node) => node.schedules.idle()));
    const settled = calls.length;
    await sleep(2_500);
    expect(calls.length).toBe(settled);
    expect(await a.schedules.get('paused')).toMatchObject({ enabled: false });

    // Enabled again (on the other instance) 400 ms after a due instant: late by the 300 ms tolerance.
    await untilPast(1_000, 400);
    await b.schedules.upsert({ id: 'paused', handler: 'integrations.poll', every: '1s', enabled: true });
    await b.schedules.upsert({ id: 'paused-catch', handler: 'integrations.poll', every: '1s', enabled: true, missed: 'run-once' });
    await eventually(() => calls.slice(settled).filter((call) => call.execution.trigger === 'schedule').length >= 4, 10_000, 'scheduled runs');
    await Promise.all(nodes.map((node) => node.schedules.idle()));
    const resumed = calls.slice(settled);
    expect(resumed.filter((call) => call.scheduleId === 'paused').every((call) => call.execution.trigger === 'schedule')).toBe(true);
    // The latest occurrence that passed while it was off runs once for the run-once schedule, on one instance.
    expect(resumed.filter((call) => call.scheduleId === 'paused-catch' && call.execution.trigger === 'catch-up')).toHaveLength(1);
    expect([...a.schedules.runs, ...b.schedules.runs].filter((run) => run.outcome === 'missed')).toEqual([]);
  });

  it('an occurrence whose holder vanished is taken over with the same idempotency key and a greater fencing token', async () => {
    const a = await start('a', { takeOverScanMs: 300 });
    await a.schedules.upsert({ id: 'nightly/export', handler: 'reports.tenant-report', cron: '0 3 * * *', timeZone: 'Europe/Berlin' });
    // What a SIGKILLed holder leaves: its occurrence RUNNING, its lease (2 s) expired by the database clock.
    const dueAt = new Date(Date.now() - 5_000);
    dueAt.setUTCMilliseconds(0);
    const runKey = `schedule=${encodeURIComponent('nightly/export')} ${dueAt.toISOString()}`;
    const [stale] = await fleet.database.sql<{ fencingToken: string }>(
      `INSERT INTO "job-scheduler" ("lockKey", code, name, type, status, "runKey", "ownerToken", "ownerId", "leaseMs", attempts, "createdAt", "modifiedAt", "startedAt")
       VALUES ($2, 'reports.tenant-report', 'reports.tenant-report', 'SCHEDULE', 'RUNNING', $1, md5(random()::text)::uuid, 'killed-node', 2000, 1,
               now() - interval '4 s', now() - interval '4 s', now() - interval '4 s')
       RETURNING "fencingToken"::text AS "fencingToken"`,
      [runKey, resolveJobIdentity({ code: 'reports.tenant-report', runKey }).lockKey],
    );
    await eventually(() => calls.some((call) => call.execution.trigger === 'take-over'), 10_000, 'the take-over');
    await a.schedules.idle();
    const [takeOver] = calls.filter((call) => call.execution.trigger === 'take-over');
    expect(takeOver.scheduleId).toBe('nightly/export');
    expect(takeOver.scheduledAt).toBe(dueAt.toISOString());
    expect(takeOver.execution.fencingToken).toBeGreaterThan(Number(stale.fencingToken));
    const [row] = await fleet.database.sql<{ status: string; attempts: number; ownerId: string }>(
      `SELECT status::text AS status, attempts, "ownerId" FROM "job-scheduler" WHERE "runKey" = $1`,
      [runKey],
    );
    expect(row).toEqual({ status: 'SUCCESS', attempts: 2, ownerId: 'a' });
  });
});
