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

describe("the jobs list's health windows", () => {
  it('probe IDX_job_scheduler_code_run_key newest first for each job and aggregate each window in one pass, with no sort of rows', async () => {
    // 300 jobs of 400 occurrence rows each beside the rows above: each window reads its job's
    // newest 300 by one backward range scan (a Limit under a nested loop over the codes), never
    // the table, and numbers them in the index's order (a WindowAgg with no Sort beneath it).
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "runKey", "fencingToken", data, "createdAt", "modifiedAt", "startedAt", "finishedAt")
       SELECT 'listed:' || j || ':' || i, 'listed.job-' || j, 'SCHEDULE', (CASE WHEN i % 7 = 0 THEN 'FAIL' ELSE 'SUCCESS' END)::"job-scheduler_status_enum",
         to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), i, CASE WHEN i % 3 = 0 THEN jsonb_build_object('handlerMs', i) END,
         k.at, k.at, k.at - interval '2 seconds', k.at
       FROM generate_series(1, 300) AS j CROSS JOIN generate_series(1, 400) AS i
       CROSS JOIN LATERAL (SELECT date_trunc('minute', now()) - i * interval '5 minutes' AS at) AS k`,
    );
    await database.sql('ANALYZE "job-scheduler"');
    const codes = [...Array.from({ length: 300 }, (_, index) => `listed.job-${index + 1}`), 'dense.job', 'minute.job'];
    const statement = statements.healthWindows(
      codes,
      codes.map(() => ''),
      300,
      new Date(Date.now() - 86_400_000).toISOString(),
    );
    const plan = await customPlanOf(
      { text: statement.text, values: [`{${codes.join(',')}}`, 300, statement.values[2], `{${codes.map(() => '""').join(',')}}`] },
      ['text[]', 'int', 'text', 'text[]'],
    );
    expect(plan).toMatch(
      /Nested Loop[\s\S]*Function Scan on wanted[\s\S]*WindowAgg[\s\S]*Limit[\s\S]*Index Scan Backward using "IDX_job_scheduler_code_run_key"/,
    );
    expect(plan).not.toMatch(/Sort|Bitmap|Seq Scan|Hash/);
  }, 60_000);
});

describe("the schedules page's health windows", () => {
  it("probe each schedule's runKey range (its handler's code, its prefix) newest first, one backward index scan per pair, no sort of rows", async () => {
    // 100 dynamic schedules of one handler, 300 occurrences each under `schedule=<id> <instant>`,
    // beside the handler's own declared-job keys (the instants alone) and the rows above: each
    // window is one backward range scan of IDX_job_scheduler_code_run_key within its prefix.
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "runKey", "fencingToken", "createdAt", "modifiedAt", "startedAt", "finishedAt")
       SELECT 'sched:' || j || ':' || i, 'report.handler', 'SCHEDULE', (CASE WHEN i % 7 = 0 THEN 'FAIL' ELSE 'SUCCESS' END)::"job-scheduler_status_enum",
         CASE WHEN j = 0 THEN '' ELSE 'schedule=report-' || j || ' ' END || to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), i,
         k.at, k.at, k.at - interval '2 seconds', k.at
       FROM generate_series(0, 100) AS j CROSS JOIN generate_series(1, 300) AS i
       CROSS JOIN LATERAL (SELECT date_trunc('minute', now()) - i * interval '5 minutes' AS at) AS k`,
    );
    await database.sql('ANALYZE "job-scheduler"');
    const pairs = Array.from({ length: 100 }, (_, index) => ({ code: 'report.handler', prefix: `schedule=report-${index + 1} ` }));
    const statement = statements.healthWindows(
      pairs.map((pair) => pair.code),
      pairs.map((pair) => pair.prefix),
      300,
      new Date(Date.now() - 86_400_000).toISOString(),
    );
    const array = (values: readonly string[]) => `{${values.map((value) => `"${value}"`).join(',')}}`;
    const plan = await customPlanOf(
      { text: statement.text, values: [array(pairs.map((pair) => pair.code)), 300, statement.values[2], array(pairs.map((pair) => pair.prefix))] },
      ['text[]', 'int', 'text', 'text[]'],
    );
    expect(plan).toMatch(
      /Nested Loop[\s\S]*Function Scan on wanted[\s\S]*WindowAgg[\s\S]*Limit[\s\S]*Index Scan Backward using "IDX_job_scheduler_code_run_key"/,
    );
    expect(plan.match(/Index Scan Backward/g)).toHaveLength(1);
    expect(plan).not.toMatch(/Sort|Bitmap|Seq Scan|Hash/);
    // Its index condition is the pair's range: the code, and the prefix then a digit.
    expect(plan).toMatch(/Index Cond: .*code.* = wanted\.code\) AND .*"runKey".* >= .*wanted\.prefix \|\| '0'.* AND .*"runKey".* < .*wanted\.prefix \|\| ':'/);
  }, 60_000);
});

describe("every job's state and latest success (the jobs list reads them for all jobs)", () => {
  /** The estimated total cost of a plan (its first line), and the server's jit_above_cost. */
  const costOf = (plan: string): number => Number(/cost=[\d.]+\.\.([\d.]+)/.exec(plan)?.[1]);
  const jitAboveCost = async (): Promise<number> => Number((await database.sql<{ cost: string }>(`SELECT current_setting('jit_above_cost') AS cost`))[0].cost);

  it('cost less than jit_above_cost at 1,000 jobs: one backward index probe per job, never JIT-compiled', async () => {
    // 1,000 jobs of 30 occurrences each, every 7th failed.
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "runKey", "fencingToken", "createdAt", "modifiedAt", "startedAt", "finishedAt")
       SELECT 'state:' || j || ':' || i, 'state.job-' || j, 'SCHEDULE', (CASE WHEN i % 7 = 0 THEN 'FAIL' ELSE 'SUCCESS' END)::"job-scheduler_status_enum",
         to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), i, k.at, k.at, k.at - interval '2 seconds', k.at
       FROM generate_series(1, 1000) AS j CROSS JOIN generate_series(1, 30) AS i
       CROSS JOIN LATERAL (SELECT date_trunc('minute', now()) - i * interval '5 minutes' AS at) AS k`,
    );
    await database.sql('ANALYZE "job-scheduler"');
    const codes = `{${Array.from({ length: 1000 }, (_, index) => `state.job-${index + 1}`).join(',')}}`;
    const limit = await jitAboveCost();

    const states = await customPlanOf({ text: statements.healthStates([]).text, values: [codes] }, ['text[]']);
    expect(states).toMatch(/Nested Loop[\s\S]*Function Scan on unnest wanted[\s\S]*Limit[\s\S]*Index Scan Backward using "IDX_job_scheduler_code_run_key"/);
    expect(states).not.toMatch(/Sort|Bitmap|Seq Scan|Hash/);
    expect(costOf(states)).toBeLessThan(limit);

    // The latest success: with the status compared as text, the planner costed each probe ~150
    // times too high (806,000 at 1,000 jobs on 400,000 rows) and PostgreSQL compiled it (60-150 ms).
    const succeeded = statements.latestScheduledRunKeys([], 'SUCCESS');
    const latest = await customPlanOf({ text: succeeded.text, values: [codes, ...succeeded.values.slice(1)] }, [
      'text[]',
      ...succeeded.values.slice(1).map(() => 'text'),
    ]);
    expect(latest).toMatch(/Nested Loop[\s\S]*Limit[\s\S]*Index Scan Backward using "IDX_job_scheduler_code_run_key"/);
    expect(costOf(latest)).toBeLessThan(limit);
  }, 60_000);
});
