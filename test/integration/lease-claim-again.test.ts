import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import {
  InvalidJobLeaseOptionsError,
  type JobAcquiredLease,
  type JobAcquireResult,
  JobLeaseDatabaseError,
  JobSchedulerService,
  JobSchedulerType,
} from '../../src/features';
import { buildLockKey } from '../../src/features/job-scheduler/job-identity';
import { createLeaseStatements } from '../../src/features/job-scheduler/job-scheduler.sql';
import { sleep, startLeaseNodes } from '../support/lease-nodes';
import { StatementCounter } from '../support/statement-counter';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * acquireMany with owner tokens the caller drew, and `{ again: true }`: a claim whose answer was
 * lost (its statement committed, or ran after the caller gave up on it) is retried with the same
 * tokens and gets back the runs it won, instead of losing them to its own rows. The faults are
 * real: a proxy that drops the server's replies or the connections, a table lock that holds the
 * first claim on the server while the retry is sent.
 */
let database: TestDatabase;
let proxy: TcpProxy;
/** A node whose connections go through the proxy, each statement bounded at 1 s. */
let behind: JobSchedulerService;
let direct: JobSchedulerService;
const counter = new StatementCounter();

beforeAll(async () => {
  database = await createTestDatabase();
  proxy = TcpProxy.forUrl(database.url);
  const url = await proxy.start(database.url);
  behind = new JobSchedulerService(await database.dataSource({ url, poolSize: 2, logger: counter, logging: true }), {
    nodeId: 'behind',
    statementTimeoutMs: 1_000,
  });
  [direct] = await startLeaseNodes(database, 1);
});

afterAll(async () => {
  await proxy.close();
  await database.drop();
});

const held = (result: JobAcquireResult): JobAcquiredLease => {
  if (!result.acquired) throw new Error('expected the run to be acquired');
  return result;
};

const rowsOf = (code: string) =>
  database.sql<{ runKey: string; id: string; status: string; ownerToken: string; fencingToken: string; attempts: number; ownerId: string }>(
    `SELECT "runKey", id, status::text AS status, "ownerToken"::text AS "ownerToken", "fencingToken"::text AS "fencingToken", attempts, "ownerId"
     FROM "job-scheduler" WHERE code = $1 ORDER BY "runKey"`,
    [code],
  );

/** Both pool connections of the proxied node open (one opened while replies are dropped would hang). */
const warm = async (): Promise<void> => {
  await Promise.all([0, 1].map(() => behind.acquireMany([])));
  const source = (behind as unknown as { executor: { rows(statement: unknown): Promise<unknown> } }).executor;
  await Promise.all([0, 1].map(() => source.rows({ text: 'SELECT pg_sleep(0.05)', values: [], operation: 'inspect' })));
};

describe('acquireMany again: a claim whose answer was lost', () => {
  it('that committed is won again under its owner token (same run, lease renewed); nobody else can claim it', async () => {
    const code = 'again.committed';
    const ownerToken = randomUUID();
    await warm();
    proxy.mute();
    let lost: unknown;
    try {
      await behind.acquireMany([{ code, runKey: 'r', leaseMs: 60_000, ownerToken }]);
    } catch (error) {
      lost = error;
    } finally {
      proxy.cut();
      proxy.unmute();
      proxy.restore();
    }
    expect(lost).toBeInstanceOf(JobLeaseDatabaseError);
    expect(JSON.stringify(counter.statements)).not.toContain(ownerToken);
    expect(String(lost)).not.toContain(ownerToken);
    const [row] = await rowsOf(code);
    expect(row).toMatchObject({ status: 'RUNNING', ownerToken, attempts: 1, ownerId: 'behind' });

    // Another node, with a token of its own or none, again or not, loses the run.
    expect((await direct.acquireMany([{ code, runKey: 'r', ownerToken: randomUUID() }], { again: true }))[0].acquired).toBe(false);
    expect((await direct.acquireMany([{ code, runKey: 'r' }], { again: true }))[0].acquired).toBe(false);
    // Without { again }, the claim's own token loses too: a first claim never adopts a row.
    expect((await behind.acquireMany([{ code, runKey: 'r', ownerToken }]))[0].acquired).toBe(false);

    await sleep(20);
    const [again] = await behind.acquireMany([{ code, runKey: 'r', leaseMs: 60_000, ownerToken }], { again: true });
    expect(again).toMatchObject({ acquired: true, id: row.id, ownerToken, fencingToken: Number(row.fencingToken), attempt: 1, reclaimed: false });
    const [renewed] = await database.sql<{ renewed: boolean }>(`SELECT "modifiedAt" > "createdAt" AS renewed FROM "job-scheduler" WHERE id = $1`, [row.id]);
    expect(renewed.renewed).toBe(true);
    expect(await rowsOf(code)).toEqual([row]);
    expect(await behind.keepAlive(held(again)).complete({ ok: true })).toBe(true);
    // Once finished, a retry of the claim gets nothing: the run is over.
    expect((await behind.acquireMany([{ code, runKey: 'r', ownerToken }], { again: true }))[0].acquired).toBe(false);
  }, 20_000);

  it('still in flight when the retry runs (held by a lock, its connection gone) is won by the retry, once', async () => {
    for (let round = 0; round < 3; round++) {
      const code = `again.in-flight-${round}`;
      const ownerToken = randomUUID();
      await warm();
      const locker = new Client({ connectionString: database.url });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE "job-scheduler" IN SHARE MODE');
        // The claim reaches the server and waits on the lock; its connection drops (no cancel
        // gets through): the server goes on with it once the lock is gone, and no one hears.
        const first = behind.acquireMany([{ code, runKey: 'r', leaseMs: 60_000, ownerToken }]).then(
          () => 'answered',
          (error: unknown) => error,
        );
        await sleep(300);
        proxy.cut();
        expect(await first).toBeInstanceOf(JobLeaseDatabaseError);
        proxy.restore();
        // The retry, from a pool of its own, waits on the same lock; then both run together.
        const retry = direct.acquireMany([{ code, runKey: 'r', leaseMs: 60_000, ownerToken }], { again: true });
        const waiting = async () =>
          Number(
            (
              await locker.query<{ count: string }>(
                `SELECT count(*)::text AS count FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
              )
            ).rows[0].count,
          );
        for (let tries = 0; (await waiting()) < 2 && tries < 100; tries++) await sleep(20);
        expect(await waiting()).toBe(2);
        await locker.query('COMMIT');
        const [won] = await retry;
        const rows = await rowsOf(code);
        // Whichever inserted the row (the first claim, or the retry when it got there first), it
        // is one row under the claim's token, and the retry holds it.
        expect(rows).toHaveLength(1);
        expect(rows[0]).toMatchObject({ status: 'RUNNING', ownerToken, attempts: 1 });
        expect(won).toMatchObject({ acquired: true, id: rows[0].id, ownerToken, attempt: 1, fencingToken: Number(rows[0].fencingToken) });
      } finally {
        await locker.end();
      }
    }
  }, 30_000);

  it('inserted but not committed when the retry begins: the retry waits for it, then gets its run (or claims it afresh if it rolled back)', async () => {
    // The first claim's own statement, held open in a transaction: its row exists, unseen by the
    // retry's snapshot, until it commits (or rolls back).
    const statement = (code: string, ownerToken: string) =>
      createLeaseStatements('"job-scheduler"', '"job-scheduler_fencingToken_seq"', '"job-scheduler_lease_expiry"').acquireBatch({
        lockKeys: [buildLockKey(JobSchedulerType.SCHEDULE, code, 'r')],
        runKeys: ['r'],
        codes: [code],
        names: [null],
        leaseMs: [60_000],
        type: 'SCHEDULE',
        ownerId: 'first',
        reclaimFailed: true,
        ownerTokens: [ownerToken],
        again: false,
        announce: false,
      });
    for (const end of ['COMMIT', 'ROLLBACK'] as const) {
      const code = `again.uncommitted-${end.toLowerCase()}`;
      const ownerToken = randomUUID();
      const first = new Client({ connectionString: database.url });
      await first.connect();
      try {
        await first.query('BEGIN');
        const { text, values } = statement(code, ownerToken);
        const claimed = await first.query<{ id: string | null }>(text, values);
        expect(claimed.rows[0].id).not.toBeNull();
        const retry = direct.acquireMany([{ code, runKey: 'r', leaseMs: 60_000, ownerToken }], { again: true });
        await sleep(300);
        await first.query(end);
        const [won] = await retry;
        const rows = await rowsOf(code);
        expect(rows).toHaveLength(1);
        expect(rows[0]).toMatchObject({ status: 'RUNNING', ownerToken, attempts: 1, ownerId: end === 'COMMIT' ? 'first' : 'node-0' });
        expect(won).toMatchObject({ acquired: true, id: rows[0].id, ownerToken, attempt: 1, reclaimed: false });
        // Another token in its place: the retry waits the same way, and loses.
        if (end === 'COMMIT') expect((await direct.acquireMany([{ code, runKey: 'r', ownerToken: randomUUID() }], { again: true }))[0].acquired).toBe(false);
      } finally {
        await first.end();
      }
    }
  });

  it('gives each run to exactly one owner when many nodes retry overlapping batches, and back to the one whose token won it', async () => {
    const nodes = await startLeaseNodes(database, 8);
    const keys = Array.from({ length: 60 }, (_, index) => `k${String(index).padStart(2, '0')}`);
    for (let round = 0; round < 3; round++) {
      const code = `again.race-${round}`;
      // node-0 won the first 20 runs before; its answers were lost.
      const mine = new Map(keys.slice(0, 20).map((key) => [key, randomUUID()]));
      const before = (await nodes[0].acquireMany([...mine].map(([runKey, ownerToken]) => ({ code, runKey, ownerToken })))).map(held);
      const wins = await Promise.all(
        nodes.map(async (node, index) => {
          const walk = [...keys.slice(index * 7), ...keys.slice(0, index * 7)];
          const won: string[] = [];
          for (let start = 0; start < walk.length; start += 10) {
            const runs = walk.slice(start, start + 10).map((runKey) => ({ code, runKey, ownerToken: (index === 0 && mine.get(runKey)) || randomUUID() }));
            const results = await node.acquireMany(runs, { again: true });
            results.forEach((result, position) => result.acquired && won.push(runs[position].runKey));
          }
          return won;
        }),
      );
      expect(wins.flat().sort()).toEqual(keys);
      expect(wins[0]).toEqual(expect.arrayContaining([...mine.keys()]));
      const rows = await rowsOf(code);
      expect(rows).toHaveLength(keys.length);
      expect(rows.every((row) => row.attempts === 1 && row.status === 'RUNNING')).toBe(true);
      expect(new Set(rows.map((row) => row.fencingToken)).size).toBe(keys.length);
      expect(rows.slice(0, 20).map((row) => row.id)).toEqual(before.map((lease) => lease.id));
    }
  }, 60_000);

  it('validates before any SQL: an owner token is a UUID, the options are { again?: boolean }', async () => {
    counter.reset();
    await expect(behind.acquireMany([{ code: 'again.bad', runKey: 'r', ownerToken: 'not-a-uuid' }])).rejects.toThrow(
      new InvalidJobLeaseOptionsError('ownerToken must be a UUID when given (e.g. crypto.randomUUID()), got a string of 10 characters'),
    );
    await expect(behind.acquireMany([{ code: 'again.bad', runKey: 'r', ownerToken: 7 as never }])).rejects.toThrow(InvalidJobLeaseOptionsError);
    await expect(behind.acquireMany([{ code: 'again.bad', runKey: 'r' }], { again: 'yes' as never })).rejects.toThrow(
      /the options of acquireMany are \{ again\?: boolean \}/,
    );
    await expect(behind.acquireMany([{ code: 'again.bad', runKey: 'r' }], 'again' as never)).rejects.toThrow(InvalidJobLeaseOptionsError);
    expect(counter.count).toBe(0);
  });
});
