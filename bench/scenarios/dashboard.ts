import 'reflect-metadata';
import { Scheduled, ScheduleHandler } from '../../src/features';
import { scheduleRunKeyPrefix } from '../../src/features/scheduling/occurrence/occurrence-keys';
import type { TestDatabase } from '../../test/support/test-database';
import { checkpoint, createBenchDatabase } from '../support/bench-database';
import { dashboardGetter, startDashboardBenchApp } from '../support/dashboard-bench-app';
import { measureJobsList } from '../support/dashboard-jobs-list';
import { formatNumber } from '../support/format';
import { percentile } from '../support/statistics';
import type { Scenario } from './scenario';

const SIZES = {
  full: { rows: 1e6, schedules: 100_000, calls: 60, warmUp: 5 },
  quick: { rows: 1e5, schedules: 10_000, calls: 15, warmUp: 3 },
};
const SCHEDULE_HANDLER = 'bench.tenant-task';
const GOAL_MS = 100;
const MINUTE_JOB = 'bench.every-minute';
const RARE_JOB = 'bench.rare-report';
const DENSE_JOB = 'bench.every-two-seconds';

@Scheduled(MINUTE_JOB, { every: '1m' })
class EveryMinuteJob {
  async run(): Promise<void> {}
}

@Scheduled(DENSE_JOB, { every: '2s' })
class EveryTwoSecondsJob {
  async run(): Promise<void> {}
}

@ScheduleHandler(SCHEDULE_HANDLER)
class TenantTaskHandler {
  async run(): Promise<void> {}
}

/** The dynamic schedule whose timeline is read: it ran every hour of the last 30 days. */
const SCHEDULE_WITH_RUNS = 'tenant-000042/task';

/**
 * `count` dynamic schedules, ids tenant-000001/task..., every hour, a tenant each (as the
 * dynamic-schedules bench), created 30 days ago; SCHEDULE_WITH_RUNS's 720 hourly occurrences.
 */
const seedDynamicSchedules = async (database: TestDatabase, count: number): Promise<void> => {
  await database.sql(
    `INSERT INTO "job-schedule" ("id", "handler", "everyMs", "data", "tenantId", "version", "createdAt")
     SELECT 'tenant-' || lpad(n::text, 6, '0') || '/task', $2, 3600000, jsonb_build_object('n', n), 'tenant-' || n, nextval('"job-schedule_version_seq"'),
       now() - interval '30 days'
     FROM generate_series(1, $1::int) AS n`,
    [count, SCHEDULE_HANDLER],
  );
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts,
       "createdAt", "modifiedAt", "startedAt", "finishedAt")
     SELECT 'seed:s:' || i, $1, 'SCHEDULE', 'SUCCESS', gen_random_uuid(), $2 || to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
       60000, 'node-1', i, 1, k.at, k.at + interval '20 ms', k.at, k.at + interval '20 ms'
     FROM generate_series(1, 720) AS i
     CROSS JOIN LATERAL (SELECT date_trunc('hour', now()) - i * interval '1 hour' AS at) AS k`,
    [SCHEDULE_HANDLER, scheduleRunKeyPrefix(SCHEDULE_WITH_RUNS)],
  );
  await database.sql('VACUUM (ANALYZE) "job-schedule"');
};

@Scheduled(RARE_JOB, { cron: '0 3 * * *', timeZone: 'Europe/Paris' })
class RareReportJob {
  async run(): Promise<void> {}
}

/**
 * Half the rows are the every-minute job's occurrences (one per past minute: 7 days of them fill
 * the 7-day timeline), a fifth of a percent of them FAIL, a few were missed or taken over; a tenth
 * are a job every 2 s (one per past 2 s: 55 hours at 1e6, more than a timeline reads); 100 are a
 * daily job's; the rest hand-acquired runs of 100 other codes; 20 RUNNING rows past their lease.
 */
export const seedDashboardRows = async (database: TestDatabase, rows: number): Promise<void> => {
  const minutes = Math.floor(rows / 2);
  const dense = Math.floor(rows / 10);
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts,
       "createdAt", "modifiedAt", "startedAt", "finishedAt")
     SELECT 'seed:d:' || i, $2, 'SCHEDULE', (CASE WHEN i % 100 = 0 THEN 'FAIL' ELSE 'SUCCESS' END)::"job-scheduler_status_enum", gen_random_uuid(),
       to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 60000, 'node-' || (i % 4), i, 1, k.at, k.at + interval '5 ms', k.at, k.at + interval '5 ms'
     FROM generate_series(1, $1::int) AS i
     CROSS JOIN LATERAL (SELECT to_timestamp(floor(extract(epoch FROM now()) / 2) * 2) - i * interval '2 seconds' AS at) AS k`,
    [dense, DENSE_JOB],
  );
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts, data,
       "createdAt", "modifiedAt", "startedAt", "finishedAt")
     SELECT 'seed:m:' || i, $2, 'SCHEDULE',
       (CASE WHEN i % 500 = 0 THEN 'FAIL' ELSE 'SUCCESS' END)::"job-scheduler_status_enum", gen_random_uuid(),
       to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 60000, 'node-' || (i % 4), i, CASE WHEN i % 997 = 0 THEN 2 ELSE 1 END,
       CASE WHEN i % 1500 = 0 THEN '{"outcome":"missed"}'::jsonb END, k.at, k.at + interval '40 ms', k.at, k.at + interval '40 ms'
     FROM generate_series(1, $1::int) AS i
     CROSS JOIN LATERAL (SELECT date_trunc('minute', now()) - i * interval '1 minute' AS at) AS k`,
    [minutes, MINUTE_JOB],
  );
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts,
       "createdAt", "modifiedAt", "startedAt", "finishedAt")
     SELECT 'seed:r:' || i, $1, 'SCHEDULE', 'SUCCESS', gen_random_uuid(),
       to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 60000, 'node-1', i, 1, k.at, k.at, k.at, k.at
     FROM generate_series(1, 100) AS i
     CROSS JOIN LATERAL (SELECT date_trunc('day', now()) + interval '2 hours' - i * interval '1 day' AS at) AS k`,
    [RARE_JOB],
  );
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts,
       "createdAt", "modifiedAt", "startedAt", "finishedAt")
     SELECT 'seed:o:' || i, 'other.code-' || (i % 100), 'SCHEDULE',
       (CASE WHEN i <= 20 THEN 'RUNNING' WHEN i % 50 = 0 THEN 'FAIL' ELSE 'SUCCESS' END)::"job-scheduler_status_enum", gen_random_uuid(),
       'order-' || i, 60000, 'node-' || (i % 4), i, 1, k.at, k.at, k.at, CASE WHEN i <= 20 THEN NULL ELSE k.at END
     FROM generate_series(1, $1::int) AS i
     CROSS JOIN LATERAL (SELECT now() - i * interval '30 seconds' AS at) AS k`,
    [rows - minutes - dense - 100],
  );
  await database.sql('VACUUM (ANALYZE) "job-scheduler"');
  await checkpoint(database);
};

export const dashboard: Scenario = {
  name: 'dashboard',
  title: 'Dashboard API server time on a large job-scheduler table',
  run: async ({ quick, cleanup, sheet, log }) => {
    const sizes = quick ? SIZES.quick : SIZES.full;
    const database = await createBenchDatabase(cleanup);
    const seeding = performance.now();
    await seedDashboardRows(database, sizes.rows);
    await seedDynamicSchedules(database, sizes.schedules);
    log(
      `dashboard: seeded ${formatNumber(sizes.rows)} rows and ${formatNumber(sizes.schedules)} dynamic schedules in ${formatNumber((performance.now() - seeding) / 1000)} s`,
    );
    const times = new Map<string, number[]>();
    let current = 'warm-up';
    const { app, base } = await startDashboardBenchApp(database, [EveryMinuteJob, EveryTwoSecondsJob, RareReportJob, TenantTaskHandler], times, () => current);
    cleanup.add(app, (started) => started.close());
    const get = dashboardGetter(base);
    const [someRun] = ((await get('/api/runs?limit=1')) as { runs: { id: string }[] }).runs;
    // A cursor deep in the table: 20 pages of 50 in.
    let deepCursor = '';
    for (let page = 0; page < 20; page++)
      deepCursor = ((await get(`/api/runs?limit=50${deepCursor ? `&cursor=${encodeURIComponent(deepCursor)}` : ''}`)) as { nextCursor: string }).nextCursor;
    const dayAYearAgo = new Date(Date.now() - 365 * 86_400_000);
    const calls: Array<[string, string]> = [
      ['jobs (list, health, next due)', '/api/jobs'],
      ['timeline 24 h (1,440 occurrences)', `/api/jobs/${MINUTE_JOB}/timeline?span=24h`],
      ['timeline 7 d (10,080 occurrences)', `/api/jobs/${MINUTE_JOB}/timeline?span=7d`],
      ['timeline 7 d of a daily job', `/api/jobs/${RARE_JOB}/timeline?span=7d`],
      ['timeline 1 h of a 2 s job (1,800, buckets)', `/api/jobs/${DENSE_JOB}/timeline?span=1h`],
      ['timeline 6 h of a 2 s job (10,800, buckets)', `/api/jobs/${DENSE_JOB}/timeline?span=6h`],
      ['timeline 24 h of a 2 s job (cut at 12,000 rows)', `/api/jobs/${DENSE_JOB}/timeline?span=24h`],
      ['timeline 7 d of a 2 s job (cut at 12,000 rows)', `/api/jobs/${DENSE_JOB}/timeline?span=7d`],
      ['runs: first page', '/api/runs?limit=50'],
      ['runs: page 21 (keyset cursor)', `/api/runs?limit=50&cursor=${encodeURIComponent(deepCursor)}`],
      ['runs: one job', `/api/runs?limit=50&code=${MINUTE_JOB}`],
      ['runs: a rare job (100 rows)', `/api/runs?limit=50&code=${RARE_JOB}`],
      ['runs: status FAIL', '/api/runs?limit=50&status=FAIL'],
      ['runs: status RUNNING (20 rows)', '/api/runs?limit=50&status=RUNNING'],
      [
        'runs: run key search (one hour of one job)',
        `/api/runs?limit=50&code=${MINUTE_JOB}&runKey=${new Date(Date.now() - 86_400_000).toISOString().slice(0, 13)}`,
      ],
      ['runs: one day a year ago', `/api/runs?limit=50&from=${dayAYearAgo.toISOString()}&to=${new Date(dayAYearAgo.getTime() + 86_400_000).toISOString()}`],
      ['run detail', `/api/runs/${someRun.id}`],
      ['leases past their lease', '/api/leases/expired'],
      [`schedules: first page (${formatNumber(sizes.schedules)})`, '/api/schedules'],
      [
        `schedules: page in the middle (keyset cursor)`,
        `/api/schedules?after=${encodeURIComponent(`tenant-${String(sizes.schedules / 2).padStart(6, '0')}/task`)}`,
      ],
      ['schedules: id search (one match)', `/api/schedules?q=${encodeURIComponent(`tenant-${String(sizes.schedules - 7).padStart(6, '0')}/`)}`],
      ['schedules: id search (a prefix of 1,000)', `/api/schedules?q=${encodeURIComponent('tenant-0010')}`],
      ['schedules: a tenant', `/api/schedules?tenant=${encodeURIComponent(`tenant-${sizes.schedules - 3}`)}`],
      ['schedules: by handler', `/api/schedules?handler=${SCHEDULE_HANDLER}`],
      ['schedule timeline 7 d (168 occurrences)', `/api/schedules/${encodeURIComponent(SCHEDULE_WITH_RUNS)}/timeline?span=7d`],
    ];
    for (let round = 0; round < sizes.warmUp; round++) for (const [, path] of calls) await get(path);
    // Interleaved rounds: every call once per round.
    for (let round = 0; round < sizes.calls; round++) {
      for (const [name, path] of calls) {
        current = name;
        await get(path);
      }
    }
    const caseName = `${formatNumber(sizes.rows)} rows`;
    for (const [name] of calls) {
      const samples = times.get(name) ?? [];
      const p50 = sheet.add(caseName, 'shipped', `${name}: p50 server time`, 'ms', [percentile(samples, 50)]);
      const p95 = sheet.add(caseName, 'shipped', `${name}: p95 server time`, 'ms', [percentile(samples, 95)]);
      sheet.goal(
        `${name} (${caseName})`,
        `p95 < ${GOAL_MS} ms`,
        `p50 ${formatNumber(p50.median)} ms, p95 ${formatNumber(p95.median)} ms`,
        quick ? null : p95.median < GOAL_MS,
      );
    }
    if (quick) sheet.note(`Quick mode seeds ${formatNumber(sizes.rows)} rows: the 1e6 goal is judged by the full run only.`);
    sheet.note(
      'Server time: from the request reaching Express to the end of the response (JSON serialization included), on loopback, the app and PostgreSQL on the same machine. Dynamic schedules: ids tenant-000001/task..., every hour, one tenant each, created 30 days ago (DynamicSchedulesModule with start: false); tenant-000042/task ran every hour of those 30 days (720 rows besides the 1e6). Seeded rows: half one every-minute job (one row per past minute), a tenth a job every 2 s, 100 of a daily job, the rest 100 hand-acquired codes, 20 RUNNING past their lease; VACUUM ANALYZE, then CHECKPOINT.',
    );
    const jobsList = await measureJobsList({ quick, cleanup, sheet, log });
    return {
      sizes: `${formatNumber(sizes.rows)} rows, ${formatNumber(sizes.schedules)} dynamic schedules; ${sizes.warmUp} warm-up rounds, then ${sizes.calls} interleaved rounds of ${calls.length} calls, one at a time; ${jobsList}`,
      variants: { shipped: 'JobSchedulerDashboardModule under the Express adapter, the migrations as shipped' },
    };
  },
};
