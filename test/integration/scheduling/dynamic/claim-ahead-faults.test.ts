import { Client } from 'pg';
import { sleep } from '../../../support/lease-nodes';
import { TcpProxy } from '../../../support/tcp-proxy';
import { calls, type DynamicNode, eventually, startDynamicNode, useDynamicFleet } from './dynamic-nodes';

const EVERY_MS = 4_000;
const AHEAD_MS = 1_500;
/** A claim is taken at most a quarter of its lease ahead: the shortest lease that lets AHEAD_MS through. */
const LEASE_MS = 4 * AHEAD_MS;
const fleet = useDynamicFleet();

/** The next due instant whose claim time is at least `marginMs` away. */
const nextDue = (marginMs: number): number => Math.ceil((Date.now() + AHEAD_MS + marginMs) / EVERY_MS) * EVERY_MS;

const rowsOf = (id: string, dueAt: number) =>
  fleet.database.sql<{ status: string; ownerId: string; claimedBeforeDue: boolean }>(
    `SELECT status::text AS status, "ownerId", "createdAt" < $2::timestamptz AS "claimedBeforeDue" FROM "job-scheduler" WHERE "runKey" = $1`,
    [`schedule=${encodeURIComponent(id)} ${new Date(dueAt).toISOString()}`, new Date(dueAt).toISOString()],
  );

/** What came of a schedule's occurrence: the handler's calls (their triggers), its rows, the instance's records. */
const occurrenceOf = async (node: DynamicNode, id: string, dueAt: number) => ({
  ran: calls.filter((call) => call.scheduleId === id && Date.parse(call.scheduledAt) === dueAt).map((call) => call.execution.trigger),
  rows: await rowsOf(id, dueAt),
  records: node.schedules.runs
    .filter((run) => run.scheduleId === id && run.scheduledAt.getTime() === dueAt)
    .map(({ trigger, outcome, errorCode }) => ({ trigger, outcome, errorCode })),
});

/**
 * The database fails the claims ahead of an instant, and is back by the instant. A claim ahead is
 * an optimisation: the occurrence is claimed again at its instant, where it would have been claimed
 * without one, so that a fault seconds before the instant does not cost the run (before the fix,
 * it was recorded failed, JOB_LEASE_UNAVAILABLE, and ran nowhere unless another instance claimed it).
 * The claim again names the claim ahead's owner token: a claim ahead that committed unseen gives
 * its run back to it, on time.
 */
describe('a claim ahead the database did not answer', () => {
  let proxy: TcpProxy | undefined;
  let node: DynamicNode | undefined;
  afterEach(async () => {
    await node?.close();
    await proxy?.close();
    node = undefined;
    proxy = undefined;
  });

  /** One instance whose every connection goes through a proxy, with a 1 s statement bound. */
  const startBehindProxy = async (): Promise<{ node: DynamicNode; proxy: TcpProxy }> => {
    proxy = TcpProxy.forUrl(fleet.database.url);
    const url = await proxy.start(fleet.database.url);
    // No change polls: during the fault, the claim is the only statement of its own making.
    node = await startDynamicNode(url, 'a', { claimAheadMs: AHEAD_MS, takeOverScanMs: 300, changePollMs: 60_000 }, 5, { statementTimeoutMs: 1_000 });
    return { node, proxy };
  };

  it('is claimed again at its instant: the database refused connections during the claim, the occurrence runs once, on time', async () => {
    const { node, proxy } = await startBehindProxy();
    await node.schedules.upsert({ id: 'refused', handler: 'reports.tenant-report', every: EVERY_MS, leaseMs: LEASE_MS });
    const dueAt = nextDue(1_500);
    // From before the claim time until shortly before the instant: no connection gets through.
    await sleep(dueAt - AHEAD_MS - 300 - Date.now());
    proxy.cut();
    await sleep(dueAt - 300 - Date.now());
    proxy.restore();
    await sleep(dueAt + 1_500 - Date.now());
    await node.schedules.idle();

    expect(await occurrenceOf(node, 'refused', dueAt)).toEqual({
      ran: ['schedule'],
      // Claimed at the instant, not before it: the claim ahead did fail.
      rows: [{ status: 'SUCCESS', ownerId: 'a', claimedBeforeDue: false }],
      records: [{ trigger: 'schedule', outcome: 'succeeded', errorCode: undefined }],
    });
  });

  it('that committed with its reply lost is claimed again at the instant under its owner token, gets its own row back and runs once, on time', async () => {
    const { node, proxy } = await startBehindProxy();
    await node.schedules.upsert({ id: 'unanswered', handler: 'reports.tenant-report', every: EVERY_MS, leaseMs: LEASE_MS });
    const dueAt = nextDue(1_500);
    // The claim reaches the database and commits; its connection drops before the answer comes back.
    // (Connections opened beforehand: one opened while the answers are dropped would hang until the cut.)
    await sleep(dueAt - AHEAD_MS - 1_000 - Date.now());
    await Promise.all(Array.from({ length: 5 }, () => node.dataSource.query('SELECT pg_sleep(0.05)')));
    await sleep(dueAt - AHEAD_MS - 300 - Date.now());
    proxy.mute();
    await sleep(dueAt - AHEAD_MS + 700 - Date.now());
    proxy.cut();
    proxy.unmute();
    proxy.restore();
    await sleep(dueAt + 1_500 - Date.now());
    await node.schedules.idle();

    // Before the claim named its owner token, the claim at the instant lost to this row and the
    // take-over ran it a lease (LEASE_MS) late.
    expect(await occurrenceOf(node, 'unanswered', dueAt)).toEqual({
      ran: ['schedule'],
      rows: [{ status: 'SUCCESS', ownerId: 'a', claimedBeforeDue: true }],
      records: [{ trigger: 'schedule', outcome: 'succeeded', errorCode: undefined }],
    });
    // On time: started well before the lease the take-over waits for would have run out.
    const [started] = calls.filter((call) => call.scheduleId === 'unanswered' && Date.parse(call.scheduledAt) === dueAt);
    expect(started.execution.startedAt.getTime() - dueAt).toBeLessThan(LEASE_MS / 2);
  }, 30_000);

  // The overload case of the 100,000-schedule bench, made to happen: the server runs the claim
  // ahead after the instance gave up on it. Here it waits on a table lock (as behind a migration),
  // its connection drops (no cancel gets through the cut), and it commits once the lock is gone,
  // while the claim again of the instant waits on the same lock: the two meet in the table.
  it('that the server runs after the instance gave up on it is won by the claim again of its instant: it runs once, on time', async () => {
    const { node, proxy } = await startBehindProxy();
    await node.schedules.upsert({ id: 'orphaned', handler: 'reports.tenant-report', every: EVERY_MS, leaseMs: LEASE_MS });
    const dueAt = nextDue(1_500);
    await sleep(dueAt - AHEAD_MS - 1_000 - Date.now());
    const locker = new Client({ connectionString: fleet.database.url });
    await locker.connect();
    try {
      await sleep(dueAt - AHEAD_MS - 300 - Date.now());
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE "job-scheduler" IN SHARE MODE');
      await sleep(dueAt - AHEAD_MS + 500 - Date.now());
      proxy.cut();
      await sleep(dueAt - 300 - Date.now());
      proxy.restore();
      await sleep(dueAt + 400 - Date.now());
      // Still on the server: the claim ahead, and the claim again of the instant behind it.
      const waiting = await locker.query<{ count: string }>(
        `SELECT count(*)::text AS count FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      expect(Number(waiting.rows[0].count)).toBeGreaterThanOrEqual(2);
      await locker.query('COMMIT');
    } finally {
      await locker.end();
    }
    await sleep(dueAt + 2_000 - Date.now());
    await node.schedules.idle();

    expect(await occurrenceOf(node, 'orphaned', dueAt)).toEqual({
      ran: ['schedule'],
      rows: [{ status: 'SUCCESS', ownerId: 'a', claimedBeforeDue: expect.any(Boolean) }],
      records: [{ trigger: 'schedule', outcome: 'succeeded', errorCode: undefined }],
    });
    const [started] = calls.filter((call) => call.scheduleId === 'orphaned' && Date.parse(call.scheduledAt) === dueAt);
    expect(started.execution.startedAt.getTime() - dueAt).toBeLessThan(LEASE_MS / 2);
  }, 30_000);

  // A schedule paused and resumed inside the window claims its instant again over the row its pause
  // ended (FAIL, released), which only such a claim may take. That claim fails here (the table is
  // locked, as a migration would, past the statement bound); the claim at the instant must take the
  // same row, or the occurrence runs nowhere.
  it('over the row its own pause ended is claimed again at the instant over that row: it runs once', async () => {
    const { node } = await startBehindProxy();
    await node.schedules.upsert({ id: 'resumed', handler: 'reports.tenant-report', every: EVERY_MS, leaseMs: LEASE_MS });
    const dueAt = nextDue(1_500);
    await sleep(dueAt - AHEAD_MS + 400 - Date.now());
    expect(await rowsOf('resumed', dueAt)).toEqual([{ status: 'RUNNING', ownerId: 'a', claimedBeforeDue: true }]);
    await node.schedules.setEnabled('resumed', false);
    await eventually(async () => (await rowsOf('resumed', dueAt))[0]?.status === 'FAIL', 2_000, 'the pause to end the claim');
    const locker = new Client({ connectionString: fleet.database.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE "job-scheduler" IN EXCLUSIVE MODE');
      await node.schedules.setEnabled('resumed', true);
      // The claim sent on resume waits on the lock until its bound (1 s) ends it, after the instant.
      await sleep(dueAt + 600 - Date.now());
      await locker.query('COMMIT');
    } finally {
      await locker.end();
    }
    await sleep(dueAt + 2_000 - Date.now());
    await node.schedules.idle();

    // A claim over an existing row reclaims it: its run reads as a take-over, as every reclaim does.
    expect(await occurrenceOf(node, 'resumed', dueAt)).toEqual({
      ran: ['take-over'],
      rows: [{ status: 'SUCCESS', ownerId: 'a', claimedBeforeDue: true }],
      records: [{ trigger: 'take-over', outcome: 'succeeded', errorCode: undefined }],
    });
  });
});
