import { InvalidJobSchedulerModuleOptionsError, JobRetention, JobSchedulerType, RETENTION_JOB_CODE } from '../../src/features';
import { sleep } from '../support/lease-nodes';
import { type NestNode, startNestNode } from '../support/nest-node';
import { createTestDatabase, type TestDatabase } from '../support/test-database';
import { recordPruneBatches, restsAfterBatches } from '../support/prune-batches';

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
  for (const dutyCycle of [0, 2, '0.5']) {
    const boot = startNestNode(database.url, { jobScheduler: { retention: { success: '7d', dutyCycle: dutyCycle as number } } });
    await expect(boot).rejects.toBeInstanceOf(InvalidJobSchedulerModuleOptionsError);
    await expect(boot).rejects.toThrow(/^retention\.dutyCycle must be a number from 0\.01 to 1 \(the share of a pass spent in prune statements\), got /);
  }
});

it("paces its batches by retention's dutyCycle: each rest at least three times its batch at 0.25", async () => {
  await database.sql('DELETE FROM "job-scheduler"');
  const node = await startNestNode(database.url, { jobScheduler: { retention: { success: '7d', every: '1h', dutyCycle: 0.25 } } });
  nodes.push(node);
  // 2,500 SUCCESS runs finished 10 days ago: batches of 1,000 (prune's default), a rest after each full one.
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", "code", "type", "status", "ownerToken", "runKey", "leaseMs", "ownerId", "attempts", "createdAt", "modifiedAt", "finishedAt")
     SELECT 'v2:paced-' || i, 'paced', 'SCHEDULE', 'SUCCESS', gen_random_uuid(), 'r' || i, 60000, 'seed', 1, now() - interval '10 days', now() - interval '10 days', now() - interval '10 days'
     FROM generate_series(1, 2500) AS i`,
  );
  const { result, batches } = await recordPruneBatches(database, () => node.app.get(JobRetention).runOnce(Date.UTC(2026, 0, 2)));
  expect(result).toBe(2_500);
  expect(batches.map((batch) => batch.rows)).toEqual([1_000, 1_000, 500]);
  for (const { took, rested } of restsAfterBatches(batches)) expect(rested).toBeGreaterThanOrEqual(3 * took - 2);
});
