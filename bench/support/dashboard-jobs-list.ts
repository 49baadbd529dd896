import type { Type } from '@nestjs/common';
import { Scheduled } from '../../src/features';
import type { TestDatabase } from '../../test/support/test-database';
import type { ScenarioContext } from '../scenarios/scenario';
import { checkpoint, createBenchDatabase } from './bench-database';
import { dashboardGetter, startDashboardBenchApp } from './dashboard-bench-app';
import { formatNumber } from './format';
import { percentile } from './statistics';

const SIZES = {
  full: { jobs: 1_000, rowsPerJob: 400, calls: 40, warmUp: 3 },
  quick: { jobs: 200, rowsPerJob: 400, calls: 10, warmUp: 2 },
};
const GOAL_MS = 100;

const jobName = (index: number): string => `bench.listed-job-${String(index).padStart(4, '0')}`;

/** `count` declared jobs every 5 minutes, as @Scheduled classes made at run time. */
const declareJobs = (count: number): Type[] =>
  Array.from({ length: count }, (_, index) => {
    class ListedJob {
      async run(): Promise<void> {}
    }
    Scheduled(jobName(index + 1), { every: '5m' })(ListedJob);
    return ListedJob;
  });

/**
 * `rowsPerJob` occurrences of each job, one per past 5 minutes (400: 33 hours, more than a health
 * window reads), each claimed 2 s before it finished; every 7th failed with an error message, one
 * in 50 was missed, one in 3 recorded its handler's run time (data.handlerMs); the newest
 * occurrence of every 10th job is RUNNING.
 */
const seedJobRows = async (database: TestDatabase, jobs: number, rowsPerJob: number): Promise<void> => {
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts, data,
       "createdAt", "modifiedAt", "startedAt", "finishedAt")
     SELECT 'seed:l:' || j || ':' || i, 'bench.listed-job-' || lpad(j::text, 4, '0'), 'SCHEDULE',
       (CASE WHEN i = 1 AND j % 10 = 0 THEN 'RUNNING' WHEN (i + j) % 7 = 0 OR (i + j) % 50 = 0 THEN 'FAIL' ELSE 'SUCCESS' END)::"job-scheduler_status_enum",
       gen_random_uuid(), to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 60000, 'node-' || (i % 4), i, 1,
       CASE WHEN i = 1 AND j % 10 = 0 THEN NULL
         WHEN (i + j) % 50 = 0 THEN '{"outcome":"missed","missed":1}'::jsonb
         WHEN (i + j) % 7 = 0 THEN jsonb_build_object('error', jsonb_build_object('name', 'Error', 'message', 'upstream answered 503 on attempt ' || i))
         WHEN (i + j) % 3 = 0 THEN jsonb_build_object('handlerMs', 200 + (i * j) % 1800) END,
       k.at - interval '2 seconds', k.at, k.at - interval '2 seconds', CASE WHEN i = 1 AND j % 10 = 0 THEN NULL ELSE k.at END
     FROM generate_series(1, $1::int) AS j CROSS JOIN generate_series(1, $2::int) AS i
     CROSS JOIN LATERAL (SELECT to_timestamp(floor(extract(epoch FROM now()) / 300) * 300) - (i - 1) * interval '5 minutes' AS at) AS k`,
    [jobs, rowsPerJob],
  );
  await database.sql('VACUUM (ANALYZE) "job-scheduler"');
  await checkpoint(database);
};

/**
 * The jobs list of an application that declares many jobs (1,000 in the full run), each with more
 * occurrence rows than its health window reads: server time of GET /api/jobs (a page with its
 * windows, and the failing jobs among all), with its verdict.
 */
export const measureJobsList = async ({ quick, cleanup, sheet, log }: Pick<ScenarioContext, 'quick' | 'cleanup' | 'sheet' | 'log'>): Promise<string> => {
  const sizes = quick ? SIZES.quick : SIZES.full;
  const database = await createBenchDatabase(cleanup);
  const seeding = performance.now();
  await seedJobRows(database, sizes.jobs, sizes.rowsPerJob);
  log(`dashboard: seeded ${formatNumber(sizes.jobs)} declared jobs x ${sizes.rowsPerJob} rows in ${formatNumber((performance.now() - seeding) / 1000)} s`);
  const times = new Map<string, number[]>();
  let current = 'warm-up';
  const { app, base } = await startDashboardBenchApp(database, declareJobs(sizes.jobs), times, () => current);
  cleanup.add(app, (started) => started.close());
  const get = dashboardGetter(base);
  type JobsAnswer = { jobs: unknown[]; total: number; pageSize: number; nextCursor: string | null; failing: unknown[]; failingTotal: number };
  const first = (await get('/api/jobs')) as JobsAnswer;
  if (first.total !== sizes.jobs) throw new Error(`dashboard bench: the jobs list counts ${first.total} jobs, not ${sizes.jobs}`);
  // Walk to the middle page once: the pages measured are the first and the middle one, alternated.
  let middle = '/api/jobs';
  for (let page = first, walked = 0; page.nextCursor && walked < Math.floor(sizes.jobs / first.pageSize / 2); walked++) {
    middle = `/api/jobs?after=${encodeURIComponent(page.nextCursor)}`;
    page = (await get(middle)) as JobsAnswer;
  }
  for (let round = 1; round < sizes.warmUp; round++) await get('/api/jobs');
  current = 'jobs';
  for (let round = 0; round < sizes.calls; round++) await get(round % 2 === 0 ? '/api/jobs' : middle);
  log(`dashboard: jobs list pages of ${first.pageSize}, ${first.failingTotal} failing jobs in all (${first.failing.length} listed)`);
  const samples = times.get('jobs') ?? [];
  const caseName = `${formatNumber(sizes.jobs)} declared jobs`;
  const name = `jobs list of ${formatNumber(sizes.jobs)} declared jobs (a page, and the failing among all)`;
  const p50 = sheet.add(caseName, 'shipped', `${name}: p50 server time`, 'ms', [percentile(samples, 50)]);
  const p95 = sheet.add(caseName, 'shipped', `${name}: p95 server time`, 'ms', [percentile(samples, 95)]);
  sheet.goal(name, `p95 < ${GOAL_MS} ms`, `p50 ${formatNumber(p50.median)} ms, p95 ${formatNumber(p95.median)} ms`, quick ? null : p95.median < GOAL_MS);
  sheet.note(
    `Jobs list: ${formatNumber(sizes.jobs)} @Scheduled jobs every 5 minutes in an app of their own, ${sizes.rowsPerJob} occurrence rows each (${formatNumber(sizes.jobs * sizes.rowsPerJob)} rows: every 7th failed with a message, 1 in 50 missed, 1 in 3 with data.handlerMs, the newest of every 10th job RUNNING); ${sizes.warmUp} warm-up calls, then ${sizes.calls} one at a time, the first page and the middle one alternated (${first.pageSize} jobs a page with their health windows, and every job's state, from which the failing ones are listed).`,
  );
  return `${formatNumber(sizes.jobs)} declared jobs x ${sizes.rowsPerJob} rows for the jobs list, ${sizes.calls} calls`;
};
