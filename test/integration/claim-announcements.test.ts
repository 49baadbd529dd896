import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { InvalidJobLeaseOptionsError, type JobAcquireManyRun, JobSchedulerService, JobSchedulerType } from '../../src/features';
import { buildLockKey } from '../../src/features/job-scheduler/job-identity';
import { sleep } from '../support/lease-nodes';
import { StatementCounter } from '../support/statement-counter';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * acquireMany `{ announce: true }`: the runs won are announced (NOTIFY on commit) and the other
 * instances, listening on a connection of their own, do not send claims those runs would lose.
 * Every instance here is a JobSchedulerService on a pool of its own; the listening connection's
 * faults come from a TCP proxy that cuts it.
 */
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  await database.drop();
});

const services: JobSchedulerService[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.beforeApplicationShutdown()));
});

/** A service on a pool of its own (through `url` when given), its statements counted. */
const node = async (nodeId: string, options: { url?: string; announceClaims?: boolean; preparedStatements?: boolean } = {}) => {
  const counter = new StatementCounter();
  const { url, ...rest } = options;
  const service = new JobSchedulerService(await database.dataSource({ ...(url ? { url } : {}), poolSize: 2, logger: counter, logging: true }), {
    nodeId,
    ...rest,
  });
  services.push(service);
  return { service, counter };
};

/** How many connections of the test's database LISTEN now. */
const listeners = async (): Promise<number> => {
  const [row] = await database.sql<{ count: string }>(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`);
  return Number(row.count);
};

const waitFor = async (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
};

const runsOf = (code: string, count: number, leaseMs = 60_000): JobAcquireManyRun[] =>
  Array.from({ length: count }, (_, index) => ({ code, runKey: `r${index}`, leaseMs, reclaimFailed: false, ownerToken: randomUUID() }));

/** Starts the node's listener (a first announced claim) and waits until the database has `expected` listeners. */
const listening = async (service: JobSchedulerService, expected: number): Promise<void> => {
  await service.acquireMany([{ code: 'announce.warm-up', runKey: randomUUID(), reclaimFailed: false }], { announce: true });
  await waitFor(`${expected} listener(s)`, async () => (await listeners()) >= expected);
};

const rowsOf = (code: string) =>
  database.sql<{ runKey: string; ownerId: string; status: string }>(
    `SELECT "runKey", "ownerId", status::text AS status FROM "job-scheduler" WHERE code = $1 ORDER BY "runKey"`,
    [code],
  );

describe('acquireMany { announce: true }', () => {
  it('announces the runs won; another instance that heard them returns them not acquired without a statement', async () => {
    const a = await node('a');
    const b = await node('b');
    await listening(a.service, 1);
    await listening(b.service, 2);
    // 400 runs: more than one notification's worth (150 lock keys each).
    const runs = runsOf('announce.heard', 400);
    const won = await a.service.acquireMany(runs, { announce: true });
    expect(won.every((result) => result.acquired)).toBe(true);
    const lastKey = buildLockKey(JobSchedulerType.SCHEDULE, 'announce.heard', 'r399');
    const heard = (b.service as unknown as { announcements: { heardWithin(key: string, ms: number): boolean } }).announcements;
    await waitFor('the last run heard', () => heard.heardWithin(lastKey, 60_000));

    b.counter.reset();
    const lost = await b.service.acquireMany(
      runs.map((run) => ({ ...run, ownerToken: randomUUID() })),
      { announce: true },
    );
    expect(lost.every((result) => !result.acquired)).toBe(true);
    expect(b.counter.statements).toEqual([]);
    // Without { announce }, the same claims are sent (and lose to the rows).
    const sent = await b.service.acquireMany(runs.slice(0, 5).map((run) => ({ ...run, ownerToken: randomUUID() })));
    expect(sent.every((result) => !result.acquired)).toBe(true);
    expect(b.counter.count).toBe(1);
    expect((await rowsOf('announce.heard')).every((row) => row.ownerId === 'a')).toBe(true);
  }, 60_000);

  it("announces lock keys only, on the table's channel: never an owner token", async () => {
    const a = await node('a');
    const listener = new Client({ connectionString: database.url });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', ({ payload }) => payloads.push(payload ?? ''));
    const [{ channel }] = (await listener.query<{ channel: string }>(`SELECT 'job_claims_' || '"job-scheduler"'::regclass::oid AS channel`)).rows;
    await listener.query(`LISTEN "${channel}"`);
    try {
      const runs = runsOf('announce.payload', 3);
      await a.service.acquireMany(runs, { announce: true });
      await waitFor('a notification', () => payloads.length > 0);
      const keys = payloads.join(' ').split(' ');
      expect(keys.sort()).toEqual(runs.map((run) => buildLockKey(JobSchedulerType.SCHEDULE, 'announce.payload', run.runKey as string)).sort());
      for (const run of runs) expect(payloads.join(' ')).not.toContain(run.ownerToken as string);
      // A claim that wins nothing announces nothing.
      payloads.length = 0;
      await a.service.acquireMany(
        runs.map((run) => ({ ...run, ownerToken: randomUUID() })),
        { announce: true },
      );
      await sleep(300);
      expect(payloads).toEqual([]);
    } finally {
      await listener.end();
    }
  }, 30_000);

  it('four instances claiming the same runs one after the other: each run won exactly once, the later ones mostly unsent', async () => {
    const nodes = await Promise.all(['n0', 'n1', 'n2', 'n3'].map((id) => node(id)));
    for (const [index, each] of nodes.entries()) await listening(each.service, index + 1);
    for (const each of nodes) each.counter.reset();
    const code = 'announce.fleet';
    const wins = new Map<string, number>();
    for (let round = 0; round < 20; round++) {
      const runs = runsOf(code, 30).map((run) => ({ ...run, runKey: `${round}-${run.runKey}` }));
      // Staggered as claims ahead are: each instance 15-65 ms after the one before, in an order of its own.
      const results = await Promise.all(
        nodes.map(async (each, index) => {
          await sleep(index * 40 + Math.floor(Math.random() * 25));
          const order = [...runs].sort(() => Math.random() - 0.5).map((run) => ({ ...run, ownerToken: randomUUID() }));
          const claimed = await each.service.acquireMany(order, { announce: true });
          return claimed.map((result, position) => (result.acquired ? order[position].runKey : null));
        }),
      );
      for (const key of results.flat()) if (key) wins.set(key, (wins.get(key) ?? 0) + 1);
    }
    expect(wins.size).toBe(600);
    expect([...wins.values()].every((count) => count === 1)).toBe(true);
    const rows = await rowsOf(code);
    expect(rows).toHaveLength(600);
    expect(rows.every((row) => row.status === 'RUNNING')).toBe(true);
    // 80 claim statements without announcements; the first instance of each round always sends.
    const statements = nodes.reduce((sum, each) => sum + each.counter.count, 0);
    expect(statements).toBeGreaterThanOrEqual(20);
    expect(statements).toBeLessThan(60);
  }, 90_000);

  it('sends what it heard when the heard row may have expired, and a retry or a claim over FAIL always', async () => {
    const a = await node('a');
    const b = await node('b');
    await listening(a.service, 1);
    await listening(b.service, 2);
    const [run] = runsOf('announce.expiring', 1, 1_000);
    const [won] = await a.service.acquireMany([run], { announce: true });
    expect(won.acquired).toBe(true);
    const lockKey = buildLockKey(JobSchedulerType.SCHEDULE, 'announce.expiring', run.runKey as string);
    const heard = (b.service as unknown as { announcements: { heardWithin(key: string, ms: number): boolean } }).announcements;
    await waitFor('the run heard', () => heard.heardWithin(lockKey, 60_000));
    // Half its lease (500 ms) after it was heard, a claim is sent: the row may have run out by then.
    await sleep(600);
    b.counter.reset();
    await b.service.acquireMany([{ ...run, ownerToken: randomUUID() }], { announce: true });
    expect(b.counter.count).toBe(1);
    // Past its lease the claim takes it over, as acquire does (its holder stopped heartbeating).
    await sleep(600);
    const [taken] = await b.service.acquireMany([{ ...run, ownerToken: randomUUID() }], { announce: true });
    expect(taken).toMatchObject({ acquired: true, reclaimed: true, attempt: 2 });

    // A claim over FAIL is sent though heard.
    const [failing] = runsOf('announce.failed', 1);
    const [first] = await a.service.acquireMany([failing], { announce: true });
    if (!first.acquired) throw new Error('expected a win');
    const failKey = buildLockKey(JobSchedulerType.SCHEDULE, 'announce.failed', failing.runKey as string);
    await waitFor('the failed run heard', () => heard.heardWithin(failKey, 60_000));
    expect(await a.service.fail(first, { reason: 'test' })).toBe(true);
    const [again] = await b.service.acquireMany([{ ...failing, ownerToken: randomUUID(), reclaimFailed: true }], { announce: true });
    expect(again).toMatchObject({ acquired: true, reclaimed: true });
  }, 30_000);

  it('a run handed over (expireMany) is announced released: an instance that heard it won claims it again, once', async () => {
    const a = await node('a');
    const b = await node('b');
    const c = await node('c');
    await listening(a.service, 1);
    await listening(b.service, 2);
    await listening(c.service, 3);
    const [run] = runsOf('announce.handed-over', 1);
    const [won] = await a.service.acquireMany([run], { announce: true });
    if (!won.acquired) throw new Error('expected a win');
    const lockKey = buildLockKey(JobSchedulerType.SCHEDULE, 'announce.handed-over', run.runKey as string);
    const heard = (service: JobSchedulerService) =>
      (service as unknown as { announcements: { heardWithin(key: string, ms: number): boolean } }).announcements.heardWithin(lockKey, 60_000);
    await waitFor('the win heard', () => heard(b.service) && heard(c.service));
    expect(await a.service.expireMany([won])).toEqual([true]);
    await waitFor('the hand-over heard', () => !heard(b.service) && !heard(c.service));
    // Both claim it again: one takes the row over, the other loses to it.
    const [fromB, fromC] = await Promise.all(
      [b, c].map(async (each) => (await each.service.acquireMany([{ ...run, ownerToken: randomUUID() }], { announce: true }))[0]),
    );
    expect([fromB, fromC].filter((result) => result.acquired)).toEqual([expect.objectContaining({ reclaimed: true, attempt: 2 })]);
  }, 30_000);

  it('with its listening connection cut, sends every claim (exactly once still) and listens again once it can', async () => {
    const proxy = TcpProxy.forUrl(database.url);
    const url = await proxy.start(database.url);
    try {
      const a = await node('a');
      const b = await node('b', { url });
      await listening(a.service, 1);
      await listening(b.service, 2);
      proxy.cut();
      await waitFor('the listener gone', async () => (await listeners()) === 1);
      // Announced while b's connection is cut: never heard by b.
      const runs = runsOf('announce.cut', 50);
      expect((await a.service.acquireMany(runs, { announce: true })).every((result) => result.acquired)).toBe(true);
      proxy.restore();
      await waitFor('the listener back', async () => (await listeners()) === 2);
      b.counter.reset();
      const lost = await b.service.acquireMany(
        runs.map((run) => ({ ...run, ownerToken: randomUUID() })),
        { announce: true },
      );
      expect(lost.every((result) => !result.acquired)).toBe(true);
      expect(b.counter.count).toBe(1);
      // Listening again, it skips what it hears from then on.
      const later = runsOf('announce.after-cut', 50);
      await a.service.acquireMany(later, { announce: true });
      const heard = (b.service as unknown as { announcements: { heardWithin(key: string, ms: number): boolean } }).announcements;
      const lastKey = buildLockKey(JobSchedulerType.SCHEDULE, 'announce.after-cut', 'r49');
      await waitFor('the runs heard', () => heard.heardWithin(lastKey, 60_000));
      b.counter.reset();
      await b.service.acquireMany(
        later.map((run) => ({ ...run, ownerToken: randomUUID() })),
        { announce: true },
      );
      expect(b.counter.count).toBe(0);
      expect((await rowsOf('announce.cut')).every((row) => row.ownerId === 'a')).toBe(true);
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it('never skips a run on its table because a table of the same name elsewhere (another schema on the search_path) announced it', async () => {
    // A second lease table in schema "other", found through the search_path as an application
    // whose role defaults to that schema finds it: the statements name both tables "job-scheduler".
    await database.sql(`CREATE SCHEMA IF NOT EXISTS other`);
    await database.sql(
      `CREATE TABLE IF NOT EXISTS other."job-scheduler" (LIKE public."job-scheduler" INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)`,
    );
    await database.sql(`CREATE SEQUENCE IF NOT EXISTS other."job-scheduler_fencingToken_seq"`);
    const pool = new Pool({ connectionString: database.url, max: 2, options: '-c search_path=other' });
    try {
      const a = await node('a');
      const elsewhere = new JobSchedulerService({ pool }, { nodeId: 'elsewhere' });
      services.push(elsewhere);
      await listening(a.service, 1);
      await listening(elsewhere, 2);
      const runs = runsOf('announce.same-name', 20);
      expect((await a.service.acquireMany(runs, { announce: true })).every((result) => result.acquired)).toBe(true);
      // Time for a notification to arrive, were it on the same channel.
      await sleep(500);
      const there = await elsewhere.acquireMany(
        runs.map((run) => ({ ...run, ownerToken: randomUUID() })),
        { announce: true },
      );
      expect(there.every((result) => result.acquired)).toBe(true);
      const [{ count }] = await database.sql<{ count: string }>(`SELECT count(*) FROM other."job-scheduler" WHERE code = 'announce.same-name'`);
      expect(Number(count)).toBe(20);
    } finally {
      await Promise.all(services.splice(0).map((service) => service.beforeApplicationShutdown()));
      await pool.end();
    }
  }, 30_000);

  it('is off with announceClaims: false and behind a pooler (preparedStatements: false): no listener, every claim sent', async () => {
    const before = await listeners();
    const off = await node('off', { announceClaims: false });
    const pooled = await node('pooled', { preparedStatements: false });
    for (const each of [off, pooled]) {
      each.counter.reset();
      await each.service.acquireMany(runsOf('announce.off', 2), { announce: true });
      expect(each.counter.count).toBe(1);
    }
    await sleep(300);
    expect(await listeners()).toBe(before);
  }, 30_000);

  it('refuses a non-boolean announce or announceClaims before any SQL', async () => {
    const a = await node('a');
    a.counter.reset();
    await expect(a.service.acquireMany(runsOf('announce.invalid', 1), { announce: 'yes' } as never)).rejects.toBeInstanceOf(InvalidJobLeaseOptionsError);
    expect(a.counter.count).toBe(0);
    const dataSource = await database.dataSource({ poolSize: 1 });
    expect(() => new JobSchedulerService(dataSource, { announceClaims: 1 as never })).toThrow(/announceClaims must be a boolean/);
    await dataSource.destroy();
  });
});
