import { InvalidJobIdentityOptionsError, InvalidJobLeaseOptionsError, JobSchedulerService, JobSchedulerStatus, JobSchedulerType } from '../../src/features';
import { startLeaseNodes, sleep } from '../support/lease-nodes';
import { StatementCounter } from '../support/statement-counter';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

interface Row {
  id: string;
  status: JobSchedulerStatus;
  ownerToken: string;
  fencingToken: string;
  attempts: number;
  ownerId: string;
  runKey: string | null;
  leaseMs: number | null;
  data: unknown;
  lastError: unknown;
  lockKey: string;
  startedAt: Date | null;
  finishedAt: Date | null;
}

let database: TestDatabase;
let nodes: JobSchedulerService[];
let counter: StatementCounter;
let counted: JobSchedulerService;

beforeAll(async () => {
  database = await createTestDatabase();
  nodes = await startLeaseNodes(database, 16);
  counter = new StatementCounter();
  counted = new JobSchedulerService(await database.dataSource({ logger: counter, logging: true, poolSize: 1 }));
});

afterAll(async () => {
  await database.drop();
});

const rowOf = async (id: string): Promise<Row> => {
  const [row] = await database.sql<Row>('SELECT * FROM "job-scheduler" WHERE id = $1', [id]);
  return row;
};

/** Moves the row's last owner write into the past, as if its heartbeats had stopped that long ago. */
const ageRow = (id: string, ms: number) =>
  database.sql(`UPDATE "job-scheduler" SET "modifiedAt" = "modifiedAt" - $2 * interval '1 millisecond' WHERE id = $1`, [id, ms]);

let sequence = 0;
const options = (extra: Record<string, unknown> = {}) => ({ code: 'sync-orders', runKey: `tick-${++sequence}`, ...extra });

describe('acquire', () => {
  it('lets exactly one of 16 nodes (16 pools) win each run, 25 runs in a row', async () => {
    for (let run = 0; run < 25; run++) {
      const request = options();
      const results = await Promise.all(nodes.map((node) => node.acquire(request)));
      const winners = results.filter((result) => result.acquired);
      expect(winners).toHaveLength(1);
      for (const loser of results.filter((result) => !result.acquired)) expect(loser).toEqual({ acquired: false });
      const [winner] = winners;
      if (!winner?.acquired) throw new Error('unreachable');
      expect(winner).toMatchObject({ fencingToken: expect.any(Number), attempt: 1, reclaimed: false, leaseMs: 900_000, heartbeatMs: 60_000 });
      expect(winner.idempotencyKey).toMatch(/^v2:/);
      const row = await rowOf(winner.id);
      expect(row).toMatchObject({ status: 'RUNNING', ownerToken: winner.ownerToken, fencingToken: String(winner.fencingToken), attempts: 1 });
      expect(row.lockKey).toBe(winner.idempotencyKey);
      expect(row.runKey).toBe(request.runKey);
    }
  });

  it('behaves the same with named prepared statements', async () => {
    const prepared = await Promise.all(
      [1, 2, 3, 4].map(async () => new JobSchedulerService(await database.dataSource({ poolSize: 2 }), { preparedStatements: true })),
    );
    for (let run = 0; run < 10; run++) {
      const request = options();
      const results = await Promise.all(prepared.map((node) => node.acquire(request)));
      const winners = results.filter((result) => result.acquired);
      expect(winners).toHaveLength(1);
      const [winner] = winners;
      if (!winner?.acquired) throw new Error('unreachable');
      expect(await prepared[run % 4].heartbeat(winner)).toBe(true);
      expect(await prepared[(run + 1) % 4].complete(winner)).toBe(true);
      expect(await prepared[(run + 2) % 4].acquire(request)).toEqual({ acquired: false });
    }
  });

  it('a loser takes no row lock and writes nothing', async () => {
    const request = options();
    const holder = await nodes[0].acquire(request);
    if (!holder.acquired) throw new Error('expected to acquire');
    // Another session holds the row lock; a loser that tried to lock the row would wait for it
    // and fail after lock_timeout. Its row version (ctid, xmin) must not change either.
    const strict = (await startLeaseNodes(database, 1, { extra: { options: '-c lock_timeout=300' } }))[0];
    const blocker = (await database.dataSource({ poolSize: 1 })).createQueryRunner();
    await blocker.connect();
    await blocker.startTransaction();
    try {
      await blocker.query('SELECT id FROM "job-scheduler" WHERE id = $1 FOR UPDATE', [holder.id]);
      const [before] = await database.sql<{ ctid: string; xmin: string }>('SELECT ctid::text, xmin::text FROM "job-scheduler" WHERE id = $1', [holder.id]);
      for (let attempt = 0; attempt < 5; attempt++) expect(await strict.acquire(request)).toEqual({ acquired: false });
      const [after] = await database.sql<{ ctid: string; xmin: string }>('SELECT ctid::text, xmin::text FROM "job-scheduler" WHERE id = $1', [holder.id]);
      expect(after).toEqual(before);
    } finally {
      await blocker.rollbackTransaction();
      await blocker.release();
    }
  });

  it('records the owner identity, lease and start time on the row', async () => {
    const lock = await nodes[3].acquire(options({ leaseMs: 45_000, name: 'Sync orders' }));
    if (!lock.acquired) throw new Error('expected to acquire');
    const row = await rowOf(lock.id);
    expect(row).toMatchObject({ ownerId: 'node-3', leaseMs: 45_000, finishedAt: null });
    expect(row.startedAt).toBeInstanceOf(Date);
  });

  it('never reclaims SUCCESS', async () => {
    const request = options();
    const lock = await nodes[0].acquire(request);
    if (!lock.acquired) throw new Error('expected to acquire');
    expect(await nodes[0].complete(lock, { rows: 42 })).toBe(true);
    await ageRow(lock.id, 10 * 24 * 3_600_000);
    const retries = await Promise.all(nodes.map((node) => node.acquire({ ...request, leaseMs: 3 })));
    expect(retries.every((result) => !result.acquired)).toBe(true);
    expect(await rowOf(lock.id)).toMatchObject({ status: 'SUCCESS', data: { rows: 42 }, fencingToken: String(lock.fencingToken) });
  });

  it('reclaims FAIL at once: same id and idempotency key, rotated token, a greater fencing token, last error kept', async () => {
    const request = options();
    const first = await nodes[0].acquire(request);
    if (!first.acquired) throw new Error('expected to acquire');
    expect(await nodes[0].fail(first, { error: 'boom' })).toBe(true);
    const results = await Promise.all(nodes.map((node) => node.acquire(request)));
    const winners = results.filter((result) => result.acquired);
    expect(winners).toHaveLength(1);
    const second = winners[0];
    if (!second?.acquired) throw new Error('unreachable');
    expect(second.id).toBe(first.id);
    expect(second.idempotencyKey).toBe(first.idempotencyKey);
    expect(second.ownerToken).not.toBe(first.ownerToken);
    expect(second).toMatchObject({ attempt: 2, reclaimed: true });
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(await rowOf(first.id)).toMatchObject({ status: 'RUNNING', data: null, lastError: { error: 'boom' }, attempts: 2 });
  });

  it('with reclaimFailed: false, leaves a FAIL row failed', async () => {
    const request = options();
    const first = await nodes[0].acquire(request);
    if (!first.acquired) throw new Error('expected to acquire');
    await nodes[0].fail(first);
    expect(await nodes[1].acquire({ ...request, reclaimFailed: false })).toEqual({ acquired: false });
    expect((await nodes[1].acquire(request)).acquired).toBe(true);
  });

  it("reclaims a stale RUNNING row only after the holder's own lease, by the database clock", async () => {
    const request = options();
    const holder = await nodes[0].acquire({ ...request, leaseMs: 60_000 });
    if (!holder.acquired) throw new Error('expected to acquire');
    // A reclaimer with a much shorter lease cannot cut the holder's lease short.
    await ageRow(holder.id, 30_000);
    expect(await nodes[1].acquire({ ...request, leaseMs: 3 })).toEqual({ acquired: false });
    await ageRow(holder.id, 31_000);
    const results = await Promise.all(nodes.slice(1).map((node) => node.acquire({ ...request, leaseMs: 60_000 })));
    const winners = results.filter((result) => result.acquired);
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ id: holder.id, attempt: 2, reclaimed: true });
    expect(winners[0].acquired && winners[0].fencingToken).toBeGreaterThan(holder.fencingToken);
    const row = await rowOf(holder.id);
    expect(row.lastError).toMatchObject({ expired: true, ownerId: 'node-0' });
    expect(row.leaseMs).toBe(60_000);
  });

  it('expires a lease in real time', async () => {
    const request = options({ leaseMs: 400 });
    const holder = await nodes[0].acquire(request);
    if (!holder.acquired) throw new Error('expected to acquire');
    expect((await nodes[1].acquire(request)).acquired).toBe(false);
    await sleep(700);
    expect((await nodes[1].acquire(request)).acquired).toBe(true);
  });

  it("uses the caller's lease for rows that stored none (written by 1.1)", async () => {
    const request = options();
    const holder = await nodes[0].acquire(request);
    if (!holder.acquired) throw new Error('expected to acquire');
    await database.sql(`UPDATE "job-scheduler" SET "leaseMs" = NULL WHERE id = $1`, [holder.id]);
    await ageRow(holder.id, 5_000);
    expect((await nodes[1].acquire({ ...request, leaseMs: 10_000 })).acquired).toBe(false);
    expect((await nodes[1].acquire({ ...request, leaseMs: 4_000 })).acquired).toBe(true);
  });

  it('fences the former owner out after its token is rotated', async () => {
    const request = options();
    const old = await nodes[0].acquire(request);
    if (!old.acquired) throw new Error('expected to acquire');
    await ageRow(old.id, 16 * 60_000);
    const current = await nodes[1].acquire(request);
    if (!current.acquired) throw new Error('expected to reclaim');
    const stale = { id: old.id, ownerToken: old.ownerToken };
    expect(await nodes[0].heartbeat(stale)).toBe(false);
    expect(await nodes[0].complete(stale, { by: 'old' })).toBe(false);
    expect(await nodes[0].fail(stale)).toBe(false);
    expect(await nodes[0].release(stale)).toBe(false);
    expect(await rowOf(old.id)).toMatchObject({ status: 'RUNNING', ownerToken: current.ownerToken, data: null });
    expect(await nodes[1].heartbeat(current)).toBe(true);
    expect(await nodes[1].complete(current)).toBe(true);
    expect(await nodes[1].complete(current)).toBe(false);
  });

  it('heartbeat bumps modifiedAt only for the current RUNNING owner', async () => {
    const lock = await nodes[0].acquire(options());
    if (!lock.acquired) throw new Error('expected to acquire');
    await ageRow(lock.id, 60_000);
    const [before] = await database.sql<{ age: number }>(
      `SELECT EXTRACT(EPOCH FROM CURRENT_TIMESTAMP - "modifiedAt") AS age FROM "job-scheduler" WHERE id = $1`,
      [lock.id],
    );
    expect(Number(before.age)).toBeGreaterThan(59);
    expect(await nodes[0].heartbeat(lock)).toBe(true);
    const [after] = await database.sql<{ age: number }>(
      `SELECT EXTRACT(EPOCH FROM CURRENT_TIMESTAMP - "modifiedAt") AS age FROM "job-scheduler" WHERE id = $1`,
      [lock.id],
    );
    expect(Number(after.age)).toBeLessThan(5);
    expect(await nodes[0].heartbeat({ id: lock.id, ownerToken: '00000000-0000-4000-8000-000000000000' })).toBe(false);
  });

  it('release gives the run back with { released: true } by default', async () => {
    const request = options();
    const lock = await nodes[0].acquire(request);
    if (!lock.acquired) throw new Error('expected to acquire');
    expect(await nodes[0].release(lock)).toBe(true);
    expect(await rowOf(lock.id)).toMatchObject({ status: 'FAIL', data: { released: true } });
    expect((await nodes[1].acquire(request)).acquired).toBe(true);
  });

  it('keeps one canonical INITIAL run per code', async () => {
    const initial = { code: 'seed-defaults', type: JobSchedulerType.INITIAL };
    const results = await Promise.all(nodes.map((node) => node.acquire(initial)));
    const winner = results.find((result) => result.acquired);
    expect(results.filter((result) => result.acquired)).toHaveLength(1);
    if (!winner?.acquired) throw new Error('unreachable');
    await nodes[0].complete(winner);
    expect((await nodes[1].acquire(initial)).acquired).toBe(false);
    expect((await nodes[1].acquire({ code: 'seed-defaults', runKey: 'x' })).acquired).toBe(true);
  });

  it('is unaffected by a node clock skewed by years', async () => {
    const request = options({ leaseMs: 60_000 });
    jest.useFakeTimers({
      now: new Date('2100-01-01T00:00:00Z'),
      doNotFake: ['nextTick', 'setImmediate', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'queueMicrotask', 'hrtime', 'performance'],
    });
    try {
      expect(Date.now()).toBeGreaterThan(4_000_000_000_000);
      const holder = await nodes[0].acquire(request);
      expect(holder.acquired).toBe(true);
      expect((await nodes[1].acquire(request)).acquired).toBe(false);
      jest.setSystemTime(new Date('1990-01-01T00:00:00Z'));
      expect((await nodes[2].acquire(request)).acquired).toBe(false);
      if (holder.acquired) expect(await nodes[0].complete(holder)).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });

  it('treats a serialization failure under stricter default isolation as a lost race', async () => {
    for (const level of ['serializable', 'repeatable read']) {
      const extra = { options: `-c default_transaction_isolation=${level.replace(' ', '\\ ')}` };
      const strict = await startLeaseNodes(database, 8, { extra });
      const probe = await database.dataSource({ extra, poolSize: 1 });
      const [setting] = (await probe.query('SHOW transaction_isolation')) as { transaction_isolation: string }[];
      expect(setting.transaction_isolation).toBe(level);
      for (let run = 0; run < 10; run++) {
        const request = options();
        const results = await Promise.all(strict.map((node) => node.acquire(request)));
        expect(results.filter((result) => result.acquired)).toHaveLength(1);
        const winner = results.find((result) => result.acquired);
        if (!winner?.acquired) throw new Error('unreachable');
        await strict[0].fail(winner);
        const reclaims = await Promise.all(strict.map((node) => node.acquire(request)));
        expect(reclaims.filter((result) => result.acquired)).toHaveLength(1);
      }
    }
  });

  it('sends one statement per operation', async () => {
    counter.reset();
    const request = options({ heartbeatMs: 0 });
    const lock = await counted.acquire(request);
    expect(counter.count).toBe(1);
    if (!lock.acquired) throw new Error('expected to acquire');
    counter.reset();
    expect(await counted.acquire(request)).toEqual({ acquired: false });
    expect(counter.count).toBe(1);
    for (const operation of [() => counted.heartbeat(lock), () => counted.fail(lock), () => counted.release(lock), () => counted.complete(lock)]) {
      counter.reset();
      await operation();
      expect(counter.count).toBe(1);
    }
    counter.reset();
    await counted.runExclusive(options({ heartbeatMs: 0 }), async () => 'done');
    expect(counter.count).toBe(2);
  });

  it('rejects bad input with a typed error before any SQL', async () => {
    counter.reset();
    const bad: unknown[] = [
      null,
      undefined,
      { code: 7, runKey: 'r' },
      { code: 'x', type: 'WEEKLY', runKey: 'r' },
      { code: 'x', type: JobSchedulerType.INITIAL, runKey: 'r' },
      { code: 'x' },
    ];
    for (const input of bad) {
      await expect(counted.acquire(input as never)).rejects.toBeInstanceOf(InvalidJobIdentityOptionsError);
    }
    for (const leaseMs of [null, NaN, Infinity, 1.5, 2, 2 ** 31, Number.MAX_SAFE_INTEGER + 1, '100']) {
      await expect(counted.acquire(options({ leaseMs }) as never)).rejects.toBeInstanceOf(InvalidJobLeaseOptionsError);
    }
    await expect(counted.acquire(options({ leaseMs: 1000, heartbeatMs: 500 }))).rejects.toBeInstanceOf(InvalidJobLeaseOptionsError);
    await expect(counted.complete({ id: 'not-a-uuid', ownerToken: 'x' })).rejects.toThrow(/UUID/);
    const fn = jest.fn();
    await expect(counted.runExclusive({ code: '' }, fn)).rejects.toBeInstanceOf(InvalidJobIdentityOptionsError);
    expect(fn).not.toHaveBeenCalled();
    expect(counter.count).toBe(0);
  });

  it('throws, never reports "not acquired", when the database cannot be reached, and recovers', async () => {
    const request = options();
    const proxy = TcpProxy.forUrl(database.url);
    const cut = new JobSchedulerService(await database.dataSource({ url: await proxy.start(database.url), poolSize: 1 }));
    try {
      expect((await cut.acquire(options())).acquired).toBe(true);
      proxy.cut();
      await expect(cut.acquire(request)).rejects.toThrow(Error);
      await expect(cut.heartbeat({ id: '00000000-0000-4000-8000-000000000000', ownerToken: '00000000-0000-4000-8000-000000000000' })).rejects.toThrow(Error);
      proxy.restore();
      expect((await cut.acquire(request)).acquired).toBe(true);
    } finally {
      await proxy.close();
    }
  });
});
