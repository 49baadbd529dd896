import { Client } from 'pg';
import { createOperationsStatements } from '../../../src/features/job-scheduler/operations/operations.sql';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

const statements = createOperationsStatements('"job-scheduler"', '"job-scheduler_lease_expiry"');

/** EXPLAIN (ANALYZE, BUFFERS) of the statement with its values, inside a transaction rolled back (the DELETE deletes nothing). */
const analyzedPlanOf = async (statement: { text: string; values: unknown[] }): Promise<string> => {
  const client = new Client({ connectionString: database.url });
  await client.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) ${statement.text}`, statement.values);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    await client.end();
  }
};

describe("retention's batch over a backlog", () => {
  it('walks IDX_job_scheduler_created_at oldest first and stops at the batch size (no bitmap of every row past the cutoff)', async () => {
    // 200,000 finished runs over the last 10 days: with a 1-day retention 180,000 are past the
    // cutoff. A bitmap scan collects every one of them for each batch of 100 (a batch's cost grew
    // with the backlog); an index scan in createdAt order reads about a batch.
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "runKey", "fencingToken", "createdAt", "modifiedAt")
       SELECT 'backlog:' || i, 'job-' || (i % 50), 'SCHEDULE', CASE WHEN i % 10 = 0 THEN 'FAIL' ELSE 'SUCCESS' END::"job-scheduler_status_enum",
         'k' || i, i, k.at, k.at
       FROM generate_series(1, 200000) AS i CROSS JOIN LATERAL (SELECT now() - i * interval '4320 milliseconds' AS at) AS k`,
    );
    await database.sql('ANALYZE "job-scheduler"');
    const plan = await analyzedPlanOf(
      statements.prune({ statuses: ['SUCCESS', 'FAIL'], type: null, olderThanMs: 86_400_000, includeRunOnceSuccess: false, batchSize: 100, codes: null }),
    );
    expect(plan).toContain('Index Scan using "IDX_job_scheduler_created_at"');
    expect(plan).not.toMatch(/Bitmap|Sort/);
    // The rows the scan handed up: the batch, not the backlog.
    const scanned = Number(/Index Scan using "IDX_job_scheduler_created_at".*\n?.*actual rows=(\d+)/.exec(plan)?.[1]);
    expect(scanned).toBeLessThanOrEqual(100);
    // One status, one type and a few codes: still no bitmap of the backlog.
    const narrow = await analyzedPlanOf(
      statements.prune({
        statuses: ['FAIL'],
        type: 'SCHEDULE',
        olderThanMs: 86_400_000,
        includeRunOnceSuccess: false,
        batchSize: 100,
        codes: ['job-10', 'job-20'],
      }),
    );
    expect(narrow).toMatch(/Index Scan using "IDX_job_scheduler_(created_at|code_created_at)"/);
    expect(narrow).not.toMatch(/Bitmap/);
    expect(narrow).toMatch(/Delete on "job-scheduler".*actual rows=100 /);
    // The rows locked are deleted where they lie (by ctid), not looked up again through the primary key.
    for (const text of [plan, narrow]) {
      expect(text).toMatch(/Tid Scan on "job-scheduler"/);
      expect(text).not.toContain('PK_job_scheduler_id');
    }
  });
});

describe("retention's batch answer", () => {
  it('is one row with the count, however many runs the batch deleted (no row per deleted run to parse on the event loop)', async () => {
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "runKey", "createdAt", "modifiedAt")
       SELECT 'answer:' || i, 'answer', 'SCHEDULE', 'SUCCESS', 'k' || i, now() - interval '3 days', now() - interval '3 days'
       FROM generate_series(1, 700) AS i`,
    );
    const batch = statements.prune({
      statuses: ['SUCCESS'],
      type: null,
      olderThanMs: 86_400_000,
      includeRunOnceSuccess: false,
      batchSize: 500,
      codes: ['answer'],
    });
    expect(await database.sql(batch.text, batch.values)).toEqual([{ deleted: 500 }]);
    expect(await database.sql(batch.text, batch.values)).toEqual([{ deleted: 200 }]);
    expect(await database.sql(batch.text, batch.values)).toEqual([{ deleted: 0 }]);
  });
});
