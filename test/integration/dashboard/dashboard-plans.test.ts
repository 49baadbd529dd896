import { Client } from 'pg';
import { createOccurrenceHistoryStatements } from '../../../src/features/job-scheduler/operations/occurrence-history.sql';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

const statements = createOccurrenceHistoryStatements('"job-scheduler"');

/** The plan PostgreSQL makes for the statement's first executions (a custom plan: the values are known). */
const customPlanOf = async (statement: { text: string; values: unknown[] }, types: string[]): Promise<string> => {
  const client = new Client({ connectionString: database.url });
  await client.connect();
  try {
    const literal = (value: unknown) => `'${String(value).replace(/'/g, "''")}'`;
    await client.query(`PREPARE timeline_read(${types.join(', ')}) AS ${statement.text}`);
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE timeline_read(${statement.values.map(literal).join(', ')})`);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await client.end();
  }
};

describe("the timeline's read of a dense job", () => {
  it('walks the index newest first and stops at the limit, where the planner underestimates the range (no read of the whole range and sort)', async () => {
    // A job every 2 s for the last 11 hours (20,000 rows), beside an every-minute job of 70 days
    // (100,000 rows) and 80,000 hand-acquired runs of other codes: over 7 days the planner takes
    // the code and the range as independent, expects fewer rows than the limit (about 3,000), and
    // with the bounds as values read the whole range by bitmap and sorted it (0.4 s at 1e6 rows).
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "runKey", "fencingToken", "createdAt", "modifiedAt")
       SELECT 'dense:' || i, 'dense.job', 'SCHEDULE', 'SUCCESS', to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), i, k.at, k.at
       FROM generate_series(1, 20000) AS i CROSS JOIN LATERAL (SELECT to_timestamp(floor(extract(epoch FROM now()) / 2) * 2) - i * interval '2 seconds' AS at) AS k`,
    );
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "runKey", "fencingToken", "createdAt", "modifiedAt")
       SELECT 'minute:' || i, 'minute.job', 'SCHEDULE', 'SUCCESS', to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), i, k.at, k.at
       FROM generate_series(1, 100000) AS i CROSS JOIN LATERAL (SELECT date_trunc('minute', now()) - i * interval '1 minute' AS at) AS k`,
    );
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "runKey", "fencingToken", "createdAt", "modifiedAt")
       SELECT 'other:' || i, 'other.code-' || (i % 100), 'SCHEDULE', 'SUCCESS', 'order-' || i, i, now(), now() FROM generate_series(1, 80000) AS i`,
    );
    await database.sql('ANALYZE "job-scheduler"');
    const to = new Date();
    const from = new Date(to.getTime() - 7 * 86_400_000);
    const plan = await customPlanOf(statements.occurrencesBetween('dense.job', from.toISOString(), to.toISOString(), 12_001), ['text', 'text', 'text', 'int']);
    expect(plan).toContain('Index Scan Backward using "IDX_job_scheduler_code_run_key"');
    expect(plan).not.toMatch(/Sort|Bitmap/);
    const schedulePlan = await customPlanOf(statements.scheduleOccurrencesBetween('dense.job', '', from.toISOString(), to.toISOString(), 12_001), [
      'text',
      'text',
      'text',
      'int',
      'text',
    ]);
    expect(schedulePlan).toContain('Index Scan Backward using "IDX_job_scheduler_code_run_key"');
    expect(schedulePlan).not.toMatch(/Sort|Bitmap/);
  }, 60_000);
});
