import { sleep } from '../../../support/lease-nodes';
import { calls, type DynamicNode, useDynamicFleet } from './dynamic-nodes';

const EVERY_MS = 4_000;
const AHEAD_MS = 1_500;
const fleet = useDynamicFleet();

const start = (name: string, options: { takeOverScanMs?: number } = {}): Promise<DynamicNode> => fleet.start(name, { claimAheadMs: AHEAD_MS, ...options });

/** The next due instant at least `marginMs` away, and a sleep until `offsetMs` from it. */
const nextDue = (marginMs: number): number => Math.ceil((Date.now() + marginMs) / EVERY_MS) * EVERY_MS;

const rowsOf = (id: string, dueAt: number) =>
  fleet.database.sql<{ status: string; data: { released?: boolean; reason?: string } | null; ownerId: string; claimedBeforeDue: boolean }>(
    `SELECT status::text AS status, data, "ownerId", "createdAt" < $2::timestamptz AS "claimedBeforeDue" FROM "job-scheduler" WHERE "runKey" = $1`,
    [`schedule=${encodeURIComponent(id)} ${new Date(dueAt).toISOString()}`, new Date(dueAt).toISOString()],
  );

describe('occurrences claimed ahead (claimAheadMs)', () => {
  it('are claimed before their instant, once across instances, and start at it', async () => {
    const [a, b] = [await start('a'), await start('b')];
    for (let index = 0; index < 40; index++) await a.schedules.upsert({ id: `ahead-${index}`, handler: 'reports.tenant-report', every: EVERY_MS });
    await b.schedules.refresh();
    // A due instant whose whole claim window lies ahead.
    const dueAt = nextDue(AHEAD_MS + 500);
    await sleep(dueAt + 1_500 - Date.now());
    await Promise.all([a.schedules.idle(), b.schedules.idle()]);
    const ran = calls.filter((call) => Date.parse(call.scheduledAt) === dueAt);
    expect(new Set(ran.map((call) => call.scheduleId)).size).toBe(40);
    expect(ran).toHaveLength(40);
    // Each instance claims in a random order of its own: both get a share.
    expect(new Set(ran.map((call) => call.node))).toEqual(new Set(['a', 'b']));
    for (const call of ran) expect(call.execution.startedAt.getTime()).toBeGreaterThanOrEqual(dueAt);
    const [{ ahead }] = await fleet.database.sql<{ ahead: number }>(
      `SELECT count(*)::int AS ahead FROM "job-scheduler" WHERE right("runKey", 24) = $1 AND "createdAt" < $1::timestamptz AND status = 'SUCCESS'`,
      [new Date(dueAt).toISOString()],
    );
    expect(ahead).toBe(40);
  });

  it('are given back when their schedule is removed or changed away from the instant, and handed over to another instance on shutdown', async () => {
    const a = await start('a');
    await a.schedules.upsert({ id: 'removed', handler: 'reports.tenant-report', every: EVERY_MS });
    await a.schedules.upsert({ id: 'moved', handler: 'reports.tenant-report', every: EVERY_MS });
    await a.schedules.upsert({ id: 'kept', handler: 'reports.tenant-report', every: EVERY_MS, data: { v: 1 } });
    await a.schedules.upsert({ id: 'stopped', handler: 'reports.tenant-report', every: EVERY_MS });
    const dueAt = nextDue(AHEAD_MS + 500);
    // Inside the window: the claims are in.
    await sleep(dueAt - AHEAD_MS / 3 - Date.now());
    expect(await rowsOf('removed', dueAt)).toEqual([expect.objectContaining({ status: 'RUNNING', ownerId: 'a', claimedBeforeDue: true })]);
    await a.schedules.remove('removed');
    await a.schedules.upsert({ id: 'moved', handler: 'reports.tenant-report', every: '7d' });
    await a.schedules.upsert({ id: 'kept', handler: 'reports.tenant-report', every: EVERY_MS, data: { v: 2 } });
    await sleep(dueAt + 1_000 - Date.now());
    await a.schedules.idle();
    expect(await rowsOf('removed', dueAt)).toEqual([expect.objectContaining({ status: 'FAIL', data: { released: true, reason: 'schedule removed' } })]);
    expect(await rowsOf('moved', dueAt)).toEqual([expect.objectContaining({ status: 'FAIL', data: { released: true, reason: 'schedule changed' } })]);
    // Still due under its new definition: it runs, with the new data.
    expect(await rowsOf('kept', dueAt)).toEqual([expect.objectContaining({ status: 'SUCCESS' })]);
    expect(calls.find((call) => call.scheduleId === 'kept' && Date.parse(call.scheduledAt) === dueAt)?.execution.schedule.data).toEqual({ v: 2 });
    // (An instant before dueAt may have run between the upserts and the claims, on a slow machine.)
    expect(calls.filter((call) => (call.scheduleId === 'removed' || call.scheduleId === 'moved') && Date.parse(call.scheduledAt) >= dueAt)).toEqual([]);

    // Shutdown inside the next window: handed over unrun (left RUNNING, lease run out), in one statement.
    const nextAt = dueAt + EVERY_MS;
    await sleep(nextAt - AHEAD_MS / 3 - Date.now());
    const runs = a.schedules.runs;
    a.statements.reset();
    await fleet.stop(a);
    expect(a.statements.statements.filter((text) => text.includes('unnest($1::uuid[], $2::uuid[])'))).toHaveLength(1);
    expect(runs.filter((run) => run.errorCode === 'JOB_SHUTDOWN')).toEqual([]);
    const [handedOver] = await fleet.database.sql<{ status: string; ownerId: string; expired: boolean }>(
      `SELECT status::text AS status, "ownerId", "modifiedAt" < CURRENT_TIMESTAMP - "leaseMs" * INTERVAL '1 millisecond' AS expired FROM "job-scheduler" WHERE "runKey" = $1`,
      [`schedule=stopped ${new Date(nextAt).toISOString()}`],
    );
    expect(handedOver).toEqual({ status: 'RUNNING', ownerId: 'a', expired: true });
    expect(calls.some((call) => Date.parse(call.scheduledAt) === nextAt)).toBe(false);

    // Another instance, started after the instant, takes both over (its scan waits for their instant).
    await sleep(nextAt + 200 - Date.now());
    const b = await start('b', { takeOverScanMs: 300 });
    await sleep(1_500);
    await b.schedules.idle();
    const takenOver = calls.filter((call) => Date.parse(call.scheduledAt) === nextAt);
    expect(takenOver.map((call) => [call.scheduleId, call.node, call.execution.trigger]).sort()).toEqual([
      ['kept', 'b', 'take-over'],
      ['stopped', 'b', 'take-over'],
    ]);
    expect(await rowsOf('stopped', nextAt)).toEqual([expect.objectContaining({ status: 'SUCCESS', ownerId: 'b' })]);
  });

  // Inside the window the occurrence is claimed; the change ends the claim (FAIL, released) and
  // comes back too close to claim ahead as usual. Before the fixes, the row stayed FAIL and the
  // instant never ran.
  it.each([
    {
      change: 'paused and resumed',
      apply: async (node: DynamicNode, id: string) => {
        await node.schedules.setEnabled(id, false);
        await node.schedules.setEnabled(id, true);
      },
    },
    {
      change: 'removed and created again',
      apply: async (node: DynamicNode, id: string) => {
        await node.schedules.remove(id);
        await node.schedules.upsert({ id, handler: 'reports.tenant-report', every: EVERY_MS });
      },
    },
  ])('are claimed again when their schedule is $change before the instant: it runs once', async ({ change, apply }) => {
    const a = await start('a');
    const id = `changed-${change.replace(/ /g, '-')}`;
    await a.schedules.upsert({ id, handler: 'reports.tenant-report', every: EVERY_MS });
    const dueAt = nextDue(AHEAD_MS + 500);
    await sleep(dueAt - AHEAD_MS / 2 - Date.now());
    expect(await rowsOf(id, dueAt)).toEqual([expect.objectContaining({ status: 'RUNNING', ownerId: 'a', claimedBeforeDue: true })]);
    await apply(a, id);
    await sleep(dueAt + 1_000 - Date.now());
    await a.schedules.idle();
    expect(await rowsOf(id, dueAt)).toEqual([expect.objectContaining({ status: 'SUCCESS', ownerId: 'a' })]);
    expect(calls.filter((call) => call.scheduleId === id && Date.parse(call.scheduledAt) === dueAt)).toHaveLength(1);
  });
});
