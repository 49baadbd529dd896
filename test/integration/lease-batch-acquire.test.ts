import { InvalidJobIdentityOptionsError, type JobAcquiredLease, type JobAcquireResult, JobSchedulerService, JobSchedulerType } from '../../src/features';
import { startLeaseNodes } from '../support/lease-nodes';
import { StatementCounter } from '../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

let database: TestDatabase;
let counter: StatementCounter;
let counted: JobSchedulerService;

beforeAll(async () => {
  database = await createTestDatabase();
  counter = new StatementCounter();
  counted = new JobSchedulerService(await database.dataSource({ logger: counter, logging: true, poolSize: 2 }), { nodeId: 'counted' });
});

afterAll(async () => {
  await database.drop();
});

const fencingSequence = async (): Promise<string> =>
  (await database.sql<{ value: string }>('SELECT last_value::text AS value FROM "job-scheduler_fencingToken_seq"'))[0].value;

const rows = (code: string) =>
  database.sql<{ runKey: string; status: string; attempts: number; fencingToken: string; ownerId: string }>(
    'SELECT "runKey", status, attempts, "fencingToken"::text AS "fencingToken", "ownerId" FROM "job-scheduler" WHERE code = $1 ORDER BY "runKey"',
    [code],
  );

const acquired = (results: JobAcquireResult[]) => results.map((result) => result.acquired);

/** The lease of a result that must have been acquired. */
const held = (result: JobAcquireResult): JobAcquiredLease => {
  if (!result.acquired) throw new Error('expected the run to be acquired');
  return result;
};

describe('acquireBatch', () => {
  it('claims several runs in one statement; a second claim loses them all, writes nothing and draws no fencing token', async () => {
    counter.reset();
    const first = await counted.acquireBatch({ code: 'batch.first', runKeys: ['a', 'b', 'c'], leaseMs: 60_000 });
    expect(counter.count).toBe(1);
    expect(acquired(first)).toEqual([true, true, true]);
    expect(new Set(first.map((result) => result.fencingToken)).size).toBe(3);
    expect(new Set(first.map((result) => result.ownerToken)).size).toBe(3);
    const sequence = await fencingSequence();
    const table = await database.sql<{ xmin: string }>('SELECT xmin::text FROM "job-scheduler" WHERE code = $1', ['batch.first']);

    counter.reset();
    const second = await counted.acquireBatch({ code: 'batch.first', runKeys: ['c', 'b', 'a'], leaseMs: 60_000 });
    expect(counter.count).toBe(1);
    expect(acquired(second)).toEqual([false, false, false]);
    expect(await fencingSequence()).toBe(sequence);
    expect(await database.sql('SELECT xmin::text FROM "job-scheduler" WHERE code = $1', ['batch.first'])).toEqual(table);
  });

  it("keeps acquire's rules per run: insert, reclaim an expired lease, a FAIL only when allowed, never a SUCCESS", async () => {
    const code = 'batch.rules';
    const done = held((await counted.acquireBatch({ code, runKeys: ['done'] }))[0]);
    const failed = held((await counted.acquireBatch({ code, runKeys: ['failed'] }))[0]);
    const expired = held((await counted.acquireBatch({ code, runKeys: ['expired'], leaseMs: 50 }))[0]);
    expect(await counted.complete(done)).toBe(true);
    expect(await counted.fail(failed, { why: 'test' })).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));

    const runKeys = ['done', 'failed', 'expired', 'fresh'];
    const results = await counted.acquireBatch({ code, runKeys, reclaimFailed: false, leaseMs: 60_000 });
    expect(acquired(results)).toEqual([false, false, true, true]);
    expect(results[2]).toMatchObject({ reclaimed: true, attempt: 2, id: expired.id });
    expect(held(results[2]).fencingToken).toBeGreaterThan(expired.fencingToken);
    expect(results[3]).toMatchObject({ reclaimed: false, attempt: 1 });
    // The expired owner is fenced out; the new one holds the run.
    expect(await counted.heartbeat(expired)).toBe(false);
    expect(await counted.heartbeat(held(results[2]))).toBe(true);

    const allowed = await counted.acquireBatch({ code, runKeys: ['failed', 'done'] });
    expect(acquired(allowed)).toEqual([true, false]);
    expect((await rows(code)).map((row) => [row.runKey, row.status, row.attempts])).toEqual([
      ['done', 'SUCCESS', 1],
      ['expired', 'RUNNING', 2],
      ['failed', 'RUNNING', 2],
      ['fresh', 'RUNNING', 1],
    ]);
  });

  it("hands out leases that heartbeat, complete and keep alive like acquire's, with owner tokens never sent as parameters", async () => {
    counter.reset();
    const logged: unknown[] = [];
    const spy = jest.spyOn(counter, 'logQuery').mockImplementation((query, parameters) => {
      counter.statements.push(query);
      logged.push(...(parameters ?? []));
    });
    try {
      const [lease] = await counted.acquireBatch({ code: 'batch.leases', runKeys: ['one'], leaseMs: 60_000 });
      if (!lease.acquired) throw new Error('not acquired');
      expect(lease).toMatchObject({ leaseMs: 60_000, heartbeatMs: 20_000, reclaimed: false, attempt: 1 });
      expect(lease.idempotencyKey).toMatch(/^v2:/);
      expect(JSON.stringify(logged)).not.toContain(lease.ownerToken);
      const hold = counted.keepAlive(lease);
      expect(await hold.complete({ ok: true })).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it("validates before any SQL: an array of distinct runKeys (at most 1,000), SCHEDULE only, acquire's own checks", async () => {
    counter.reset();
    await expect(counted.acquireBatch({ code: 'batch.bad', runKeys: ['a', ' a '] })).rejects.toThrow(
      new InvalidJobIdentityOptionsError('Job runKeys must be distinct: entry 1 names a run an earlier entry names'),
    );
    await expect(counted.acquireBatch({ code: 'batch.bad', runKeys: Array.from({ length: 1_001 }, (_, i) => `k${i}`) })).rejects.toThrow(
      /at most 1000 runKeys, got 1001 entries/,
    );
    await expect(counted.acquireBatch({ code: 'batch.bad', runKeys: 'a' as never })).rejects.toThrow(InvalidJobIdentityOptionsError);
    await expect(counted.acquireBatch({ code: 'batch.bad', runKeys: ['a', 7 as never] })).rejects.toThrow(/runKey must be a string/);
    await expect(counted.acquireBatch({ code: 'batch.bad', runKeys: ['a'], type: JobSchedulerType.INITIAL })).rejects.toThrow(/INITIAL/);
    await expect(counted.acquireBatch({ code: ' ', runKeys: [] })).rejects.toThrow(/code must contain 1-64/);
    await expect(counted.acquireBatch({ code: 'batch.bad', runKeys: ['a'], leaseMs: 1 })).rejects.toThrow(/leaseMs/);
    expect(await counted.acquireBatch({ code: 'batch.empty', runKeys: [] })).toEqual([]);
    expect(counter.count).toBe(0);
  });

  it('gives each run to exactly one of many nodes claiming overlapping batches in different orders, without deadlock', async () => {
    const nodes = await startLeaseNodes(database, 8);
    const keys = Array.from({ length: 60 }, (_, index) => `k${String(index).padStart(2, '0')}`);
    for (let round = 0; round < 5; round++) {
      const code = `batch.race-${round}`;
      const wins = await Promise.all(
        nodes.map(async (node, index) => {
          // Each node walks the keys from its own offset, in batches of 10.
          const walk = [...keys.slice(index * 7), ...keys.slice(0, index * 7)];
          const won: string[] = [];
          for (let start = 0; start < walk.length; start += 10) {
            const runKeys = walk.slice(start, start + 10);
            const results = await node.acquireBatch({ code, runKeys, leaseMs: 60_000 });
            results.forEach((result, position) => result.acquired && won.push(runKeys[position]));
          }
          return won;
        }),
      );
      expect(wins.flat().sort()).toEqual(keys);
      const table = await rows(code);
      expect(table).toHaveLength(keys.length);
      expect(new Set(table.map((row) => row.fencingToken)).size).toBe(keys.length);
    }
  });
});
