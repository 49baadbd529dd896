import { InvalidJobSchedulerModuleOptionsError, JobRetention, JobSchedulerType, RETENTION_JOB_CODE } from '../../src/features';
import { sleep } from '../support/lease-nodes';
import { type NestNode, startNestNode } from '../support/nest-node';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

let database: TestDatabase;
const nodes: NestNode[] = [];
beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((node) => node.close()));
});
afterAll(() => database.drop());

/** Finished runs aged `days`: `count` SUCCESS and `count` FAIL, plus one run-once SUCCESS. */
const seed = async (node: NestNode, days: number, count: number) => {
  for (let index = 0; index < count; index++) {
    for (const outcome of ['ok', 'ko']) {
      const lock = await node.jobs.acquire({ code: 'nightly', runKey: `${days}-${outcome}-${index}` });
      if (!lock.acquired) throw new Error('expected to acquire');
      await (outcome === 'ok' ? node.jobs.complete(lock) : node.jobs.fail(lock));
    }
  }
  const seedRun = await node.jobs.acquire({ code: `seed-${days}`, type: JobSchedulerType.INITIAL });
  if (seedRun.acquired) await node.jobs.complete(seedRun);
  await database.sql(
    `UPDATE "job-scheduler" SET "createdAt" = now() - $1 * interval '1 day', "modifiedAt" = now() - $1 * interval '1 day' WHERE "runKey" LIKE $2 OR code = $3`,
    [days, `${days}-%`, `seed-${days}`],
  );
};

const left = async () =>
  (
    await database.sql<{ runKey: string | null; code: string }>(`SELECT code, "runKey" FROM "job-scheduler" WHERE code <> $1 ORDER BY code, "runKey"`, [
      RETENTION_JOB_CODE,
    ])
  ).map((row) => row.runKey ?? row.code);

it('prunes once per period across nodes: old SUCCESS past 7d, old FAIL past 30d, never run-once markers', async () => {
  const retention = { success: '7d', fail: '30d', every: '1h' };
  const [a, b] = await Promise.all([1, 2].map(() => startNestNode(database.url, { jobScheduler: { retention } })));
  nodes.push(a, b);
  await seed(a, 10, 3);
  await seed(a, 40, 2);
  const period = Date.UTC(2026, 0, 1, 3);
  const results = await Promise.all([a, b].map((node) => node.app.get(JobRetention).runOnce(period)));
  expect(results.sort()).toEqual([7, null]);
  expect(await left()).toEqual(['10-ko-0', '10-ko-1', '10-ko-2', 'seed-10', 'seed-40']);
  expect(await a.app.get(JobRetention).runOnce(period)).toBeNull();
});

it('runs on its own at each epoch-aligned period', async () => {
  await database.sql('DELETE FROM "job-scheduler"');
  const node = await startNestNode(database.url, { jobScheduler: { retention: { success: '1d', every: 1_000 } } });
  nodes.push(node);
  await seed(node, 3, 2);
  for (let waited = 0; waited < 10_000 && (await left()).some((key) => key.includes('-ok-')); waited += 200) await sleep(200);
  expect(await left()).toEqual(['3-ko-0', '3-ko-1', 'seed-3']);
});

it('refuses unusable retention options at boot', async () => {
  await expect(startNestNode(database.url, { jobScheduler: { retention: { success: 'forever' } } })).rejects.toBeInstanceOf(
    InvalidJobSchedulerModuleOptionsError,
  );
});
