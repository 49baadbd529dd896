import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { JobSchedulerService, JobSchedulerType } from '../../src/features';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/** UPGRADING.md's statement for 1.0 keys, run as written: 1.0's finished runs stay finished in 2.0. */
let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.drop());

const upgradingSql = (): string => {
  const text = readFileSync(join(__dirname, '..', '..', 'UPGRADING.md'), 'utf8');
  const match = /## Rewriting 1\.0 keys[\s\S]*?```sql\n([\s\S]*?)```/.exec(text);
  if (!match) throw new Error('UPGRADING.md has no SQL block under "Rewriting 1.0 keys"');
  return match[1];
};

it('gives rows written by 1.0 the keys 2.0 computes, so their runs stay finished', async () => {
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken") VALUES
      ('seed-demo', 'seed-demo', 'INITIAL', 'SUCCESS', gen_random_uuid()),
      ('sync-orders:2026-07-20T03:00:00Z', 'sync-orders', 'SCHEDULE', 'SUCCESS', gen_random_uuid()),
      ('v2:already-new', 'other', 'SCHEDULE', 'SUCCESS', gen_random_uuid())`,
  );
  const jobs = new JobSchedulerService(await database.dataSource({ poolSize: 1 }));
  // Before: 2.0 does not recognise them, and would run them again.
  expect((await jobs.acquire({ code: 'seed-demo', type: JobSchedulerType.INITIAL })).acquired).toBe(true);
  await database.sql(`DELETE FROM "job-scheduler" WHERE "lockKey" LIKE 'v2:%' AND code = 'seed-demo'`);

  await database.sql(upgradingSql());

  expect(await jobs.acquire({ code: 'seed-demo', type: JobSchedulerType.INITIAL })).toEqual({ acquired: false });
  expect(await jobs.acquire({ code: 'sync-orders', runKey: '2026-07-20T03:00:00Z' })).toEqual({ acquired: false });
  const rows = await database.sql<{ lockKey: string; runKey: string | null }>(`SELECT "lockKey", "runKey" FROM "job-scheduler" ORDER BY code`);
  expect(rows).toEqual([
    { lockKey: 'v2:already-new', runKey: null },
    { lockKey: expect.stringMatching(/^v2:/), runKey: null },
    { lockKey: 'v2:aV_0WdnjWG686cnhQIIg7xFYkUVv2kIMT-wOCbiWakI', runKey: '2026-07-20T03:00:00Z' },
  ]);
});
