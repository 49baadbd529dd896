import { InvalidJobQueryOptionsError, JobRunsInspector, JobSchedulerService, JobSchedulerStatus, JobSchedulerType } from '../../src/features';
import { Client } from 'pg';
import { StatementCounter } from '../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../support/test-database';
import { recordPruneBatches, restsAfterBatches } from '../support/prune-batches';

let database: TestDatabase;
let jobs: JobSchedulerService;
let inspector: JobRunsInspector;
let counter: StatementCounter;

beforeAll(async () => {
  database = await createTestDatabase();
  counter = new StatementCounter();
  const dataSource = await database.dataSource({ logger: counter, logging: true });
  jobs = new JobSchedulerService(dataSource, { nodeId: 'ops-node' });
  inspector = new JobRunsInspector(dataSource);
});
beforeEach(() => database.sql('DELETE FROM "job-scheduler"'));
afterAll(() => database.drop());

/** Ages a run by `days`, as if it had been created and finished that long ago. */
const age = (id: string, days: number) =>
  database.sql(
    `UPDATE "job-scheduler" SET "createdAt" = "createdAt" - $2 * interval '1 day', "modifiedAt" = "modifiedAt" - $2 * interval '1 day' WHERE id = $1`,
    [id, days],
  );

const finished = async (code: string, runKey: string | undefined, status: 'SUCCESS' | 'FAIL', days: number, type = JobSchedulerType.SCHEDULE) => {
  const lock = await jobs.acquire({ code, runKey, type });
  if (!lock.acquired) throw new Error('expected to acquire');
  await (status === 'SUCCESS' ? jobs.complete(lock) : jobs.fail(lock, { error: 'x' }));
  await age(lock.id, days);
  return lock;
};

const remaining = async () =>
  (
    await database.sql<{ code: string; runKey: string | null; status: string }>('SELECT code, "runKey", status FROM "job-scheduler" ORDER BY code, "runKey"')
  ).map((row) => `${row.code}/${row.runKey}/${row.status}`);

describe('prune', () => {
  it('deletes finished rows older than the cutoff in bounded batches, never RUNNING nor run-once SUCCESS', async () => {
    for (let day = 0; day < 25; day++) await finished('sync', `old-${String(day).padStart(2, '0')}`, day % 2 ? 'FAIL' : 'SUCCESS', 40);
    await finished('sync', 'recent', 'SUCCESS', 1);
    await finished('seed', undefined, 'SUCCESS', 400, JobSchedulerType.INITIAL);
    const running = await jobs.acquire({ code: 'sync', runKey: 'stuck', leaseMs: 60_000 });
    if (running.acquired) await age(running.id, 100);
    counter.reset();
    expect(await jobs.prune({ olderThan: '30d', batchSize: 10 })).toBe(25);
    expect(counter.count).toBe(3);
    expect(await remaining()).toEqual(['seed/null/SUCCESS', 'sync/recent/SUCCESS', 'sync/stuck/RUNNING']);
  });

  it('passes over a row an acquire is reclaiming (locked by another transaction) without waiting, and keeps it once reclaimed', async () => {
    const reclaimed = await finished('sync', 'reclaimed', 'FAIL', 40);
    await finished('sync', 'other', 'FAIL', 40);
    const holder = new Client({ connectionString: database.url });
    await holder.connect();
    try {
      // What an acquire taking the FAIL row over holds until it commits: the row's lock, then its new version.
      await holder.query('BEGIN');
      await holder.query(`SELECT id FROM "job-scheduler" WHERE id = $1 FOR UPDATE`, [reclaimed.id]);
      // SKIP LOCKED: prune does not wait for the holder (the test would time out if it did).
      expect(await jobs.prune({ olderThan: '30d' })).toBe(1);
      await holder.query(`UPDATE "job-scheduler" SET status = 'RUNNING', "modifiedAt" = now() WHERE id = $1`, [reclaimed.id]);
      await holder.query('COMMIT');
    } finally {
      await holder.end();
    }
    expect(await jobs.prune({ olderThan: '30d' })).toBe(0);
    expect(await remaining()).toEqual(['sync/reclaimed/RUNNING']);
  });

  it('filters by status and type, stops at a limit, and deletes run-once rows only when asked loudly', async () => {
    await finished('a', 'ok', 'SUCCESS', 10);
    await finished('a', 'ko', 'FAIL', 10);
    await finished('seed', undefined, 'SUCCESS', 10, JobSchedulerType.INITIAL);
    expect(await jobs.prune({ olderThan: '5d', status: JobSchedulerStatus.FAIL })).toBe(1);
    expect(await jobs.prune({ olderThan: '5d', type: JobSchedulerType.INITIAL })).toBe(0);
    expect(await jobs.prune({ olderThan: '5d', limit: 1 })).toBe(1);
    expect(await remaining()).toEqual(['seed/null/SUCCESS']);
    expect(await jobs.prune({ olderThan: 5 * 86_400_000, dangerouslyDeleteRunOnceSuccess: true })).toBe(1);
    // The run-once job can now run again: that is why the option is loud.
    expect((await jobs.acquire({ code: 'seed', type: JobSchedulerType.INITIAL })).acquired).toBe(true);
  });

  it('rests between batches in proportion to each batch (dutyCycle), and still deletes every row past the horizon', async () => {
    for (let index = 0; index < 40; index++) await finished('paced', `old-${String(index).padStart(2, '0')}`, 'SUCCESS', 40);
    await finished('paced', 'recent', 'SUCCESS', 1);
    // Each prune statement takes at least 30 ms and leaves when it ran, by the database clock.
    const { result, batches } = await recordPruneBatches(database, () => jobs.prune({ olderThan: '30d', batchSize: 10, dutyCycle: 0.25 }));
    expect(result).toBe(40);
    // Four full batches, then the one that comes back short (nothing left past the horizon).
    expect(batches).toHaveLength(5);
    // At 0.25 the rest is three times the batch as prune timed it (round trip included, so at
    // least the server's part); 2 ms for timer rounding.
    for (const { took, rested } of restsAfterBatches(batches)) expect(rested).toBeGreaterThanOrEqual(3 * took - 2);
    expect(await remaining()).toEqual(['paced/recent/SUCCESS']);
  });

  it('deletes batchSize rows per statement, paced or not, and caps the last batch at the limit', async () => {
    const seed = (count: number) =>
      database.sql(
        `INSERT INTO "job-scheduler" ("lockKey", "code", "type", "status", "ownerToken", "runKey", "leaseMs", "ownerId", "attempts", "createdAt", "modifiedAt", "finishedAt")
         SELECT 'v2:ramp-' || i, 'ramp', 'SCHEDULE', 'SUCCESS', gen_random_uuid(), 'r' || i, 60000, 'seed', 1, now() - interval '40 days', now() - interval '40 days', now() - interval '40 days'
         FROM generate_series(1, $1::int) AS i`,
        [count],
      );
    const rowsPerBatch = async (prune: () => Promise<number>, expected: number) => {
      const { result, batches } = await recordPruneBatches(database, prune);
      expect(result).toBe(expected);
      return batches.map((batch) => batch.rows);
    };
    await seed(1_000);
    expect(await rowsPerBatch(() => jobs.prune({ olderThan: '30d', batchSize: 300 }), 1_000)).toEqual([300, 300, 300, 100]);
    await seed(1_000);
    expect(await rowsPerBatch(() => jobs.prune({ olderThan: '30d', batchSize: 300, dutyCycle: 1 }), 1_000)).toEqual([300, 300, 300, 100]);
    // A pass that finds few rows deletes them in one statement; a limit caps the last batch.
    await seed(60);
    expect(await rowsPerBatch(() => jobs.prune({ olderThan: '30d' }), 60)).toEqual([60]);
    await seed(1_000);
    expect(await rowsPerBatch(() => jobs.prune({ olderThan: '30d', batchSize: 200, limit: 250 }), 250)).toEqual([200, 50]);
  });

  it('refuses bad options before any SQL', async () => {
    counter.reset();
    for (const options of [
      {},
      { olderThan: 0 },
      { olderThan: 'soon' },
      { olderThan: '1d', status: 'RUNNING' },
      { olderThan: '1d', limit: 0 },
      { olderThan: '1d', dangerouslyDeleteRunOnceSuccess: 'yes' },
      { olderThan: '1d', dutyCycle: 0 },
      { olderThan: '1d', dutyCycle: 0.001 },
      { olderThan: '1d', dutyCycle: 1.5 },
      { olderThan: '1d', dutyCycle: Number.NaN },
      { olderThan: '1d', dutyCycle: '0.5' },
    ]) {
      await expect(jobs.prune(options as never)).rejects.toBeInstanceOf(InvalidJobQueryOptionsError);
    }
    expect(counter.count).toBe(0);
  });
});

describe('JobRunsInspector', () => {
  it('pages through runs newest first with a cursor that never skips or repeats', async () => {
    for (let index = 0; index < 23; index++) await finished('report', `tick-${index}`, 'SUCCESS', 0);
    await finished('other', 'x', 'FAIL', 0);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await inspector.findRuns({ code: 'report', limit: 5, cursor });
      seen.push(...page.runs.map((run) => run.runKey as string));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toHaveLength(23);
    expect(new Set(seen).size).toBe(23);
    expect(seen[0]).toBe('tick-22');
    const failed = await inspector.findRuns({ status: JobSchedulerStatus.FAIL });
    expect(failed.runs.map((run) => run.code)).toEqual(['other']);
    expect(failed.nextCursor).toBeUndefined();
    expect(failed.runs[0]).not.toHaveProperty('ownerToken');
  });

  it('gets one logical run by its identity, typed', async () => {
    const lock = await finished('sync-orders', '2026-07-20T03:00:00Z', 'SUCCESS', 0);
    const run = await inspector.getRun({ code: 'sync-orders', runKey: '2026-07-20T03:00:00Z' });
    expect(run).toMatchObject({
      id: lock.id,
      idempotencyKey: 'v2:aV_0WdnjWG686cnhQIIg7xFYkUVv2kIMT-wOCbiWakI',
      status: 'SUCCESS',
      type: 'SCHEDULE',
      fencingToken: lock.fencingToken,
      attempts: 1,
      ownerId: 'ops-node',
    });
    expect(run?.finishedAt).toBeInstanceOf(Date);
    expect(await inspector.getRun({ code: 'sync-orders', runKey: 'never' })).toBeNull();
  });

  it('lists RUNNING leases past their lease with the holder and its last heartbeat age', async () => {
    const dead = await jobs.acquire({ code: 'export', runKey: 'dead', leaseMs: 60_000 });
    await jobs.acquire({ code: 'export', runKey: 'alive', leaseMs: 60_000 });
    if (!dead.acquired) throw new Error('expected to acquire');
    await database.sql(`UPDATE "job-scheduler" SET "modifiedAt" = "modifiedAt" - interval '5 minutes' WHERE id = $1`, [dead.id]);
    const expired = await inspector.findExpiredLeases();
    expect(expired.map((run) => [run.runKey, run.ownerId])).toEqual([['dead', 'ops-node']]);
    expect(expired[0].heartbeatAgeMs).toBeGreaterThanOrEqual(300_000);
    expect(expired[0].overdueMs).toBeGreaterThanOrEqual(240_000);
    expect(await inspector.countExpiredLeases()).toBe(1);
  });

  it('refuses bad filters before any SQL', async () => {
    counter.reset();
    for (const filter of [{ status: 'DONE' }, { limit: 0 }, { limit: 5000 }, { cursor: 'garbage' }, { from: 'yesterday' }, { code: '' }]) {
      await expect(inspector.findRuns(filter as never)).rejects.toBeInstanceOf(InvalidJobQueryOptionsError);
    }
    expect(counter.count).toBe(0);
  });
});
