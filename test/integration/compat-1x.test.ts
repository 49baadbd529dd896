import type { DataSource } from 'typeorm';
import { JobScheduler, JobSchedulerService, JobSchedulerType, LostJobLeaseError } from '../../src/features';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * 1.x constructed the service from a repository (`@InjectRepository(JobScheduler)`); that form
 * keeps working. The cases of 1.x's own spec (written against mocks there), on a real
 * PostgreSQL with independent pools.
 */
let database: TestDatabase;
const sources: DataSource[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.drop());

/** A node the 1.x way: a service over a repository of its own DataSource. */
const legacyNode = async (): Promise<JobSchedulerService> => {
  const dataSource = await database.dataSource({ poolSize: 2 });
  sources.push(dataSource);
  return new JobSchedulerService(dataSource.getRepository(JobScheduler));
};

let sequence = 0;
const tick = () => ({ code: 'legacy-sync', runKey: `2026-01-01T00:0${++sequence}` });

describe('new JobSchedulerService(repository), as in 1.x', () => {
  it('lets only the first acquire win', async () => {
    const node = await legacyNode();
    const request = tick();
    expect((await node.acquire(request)).acquired).toBe(true);
    expect(await node.acquire(request)).toEqual({ acquired: false });
  });

  it('lets exactly one of 8 concurrent acquires win', async () => {
    const nodes = await Promise.all(Array.from({ length: 8 }, () => legacyNode()));
    const request = tick();
    const results = await Promise.all(nodes.map((node) => node.acquire(request)));
    expect(results.filter((result) => result.acquired)).toHaveLength(1);
  });

  it('keeps runKeys independent', async () => {
    const node = await legacyNode();
    expect((await node.acquire(tick())).acquired).toBe(true);
    expect((await node.acquire(tick())).acquired).toBe(true);
  });

  it('runs an INITIAL job once', async () => {
    const node = await legacyNode();
    const seed = { code: 'legacy-seed', type: JobSchedulerType.INITIAL };
    expect(await node.runExclusive(seed, async () => 'seeded')).toEqual({ acquired: true, result: 'seeded' });
    expect(await node.runExclusive(seed, async () => 'again')).toEqual({ acquired: false });
  });

  it('runExclusive: SUCCESS on success, FAIL and rethrow on failure (2.0 data shape), LostJobLeaseError.jobId', async () => {
    const node = await legacyNode();
    const ok = tick();
    expect(await node.runExclusive(ok, async () => 42)).toEqual({ acquired: true, result: 42 });
    const failing = tick();
    const boom = new Error('boom');
    await expect(node.runExclusive(failing, async () => Promise.reject(boom))).rejects.toBe(boom);
    const rows = await database.sql<{ runKey: string; status: string; data: unknown }>(
      'SELECT "runKey", status::text, data FROM "job-scheduler" WHERE "runKey" = ANY($1) ORDER BY "runKey"',
      [[ok.runKey, failing.runKey]],
    );
    expect(rows).toEqual([
      { runKey: ok.runKey, status: 'SUCCESS', data: null },
      { runKey: failing.runKey, status: 'FAIL', data: { error: { name: 'Error', message: 'boom' } } },
    ]);
    expect(new LostJobLeaseError('00000000-0000-4000-8000-000000000000').jobId).toBe('00000000-0000-4000-8000-000000000000');
  });

  it('refuses what is not a repository, with a clear TypeError', () => {
    expect(() => new JobSchedulerService({} as never)).toThrow(/needs a TypeORM DataSource, a Repository<JobScheduler> or \{ pool \}/);
  });
});
