import { join } from 'node:path';
import { createBenchDatabase } from '../support/bench-database';
import type { DynamicWorkerArguments, DynamicWorkerLine } from '../support/dynamic-schedules-worker';
import { UPSERT_MANY_CHUNK_ROWS } from '../../src/features/scheduling/dynamic/dynamic-schedule-batch';
import { DEFAULT_DYNAMIC_CLAIM_AHEAD_MS } from '../../src/features/scheduling/dynamic/dynamic-schedules.service';
import { scaledClaimAheadMs } from '../../src/features/scheduling/occurrence/ahead-claims';
import { seedDynamicSchedules } from '../support/dynamic-schedules-seed';
import { formatNumber } from '../support/format';
import { percentile } from '../support/statistics';
import { lineOf, runWorkerProcess } from '../support/worker-process';
import type { Scenario } from './scenario';

const WORKER = join(__dirname, '..', 'support', 'dynamic-schedules-worker.ts');
const INSTANCES = 3;
const WORK_MS = 5;
const CHANGE_POLL_MS = 2_000;
const POOL_SIZE = 10;
const SIZES = {
  full: { schedules: [1_000, 10_000, 100_000], everyMs: 60_000 },
  quick: { schedules: [1_000], everyMs: 10_000 },
};
/** How long before the measured instant its claims go out (the default lead, scaled by the schedules' count). */
const claimLeadMs = (schedules: number): number => scaledClaimAheadMs(DEFAULT_DYNAMIC_CLAIM_AHEAD_MS, schedules);
/** Boot (ts-node, loading every schedule, reading their history), then the claims' lead, before the measured due instant. */
const bootAllowanceMs = (schedules: number): number => 20_000 + schedules / 5 + claimLeadMs(schedules);
/** After the due instant: time for every run to start and finish everywhere, ending before the next instant's claims. */
const settleMs = (schedules: number, everyMs: number): number => Math.min(everyMs - 5_000, 8_000 + schedules / 2);

/**
 * N dynamic schedules due at the same instant (every minute, 5 ms of work each) on 3 instances
 * (separate processes, a pool of 10 each, one database): every occurrence once, statements per
 * run across the fleet, start delay after the due instant, Node CPU per occurrence per instance,
 * the change polls' statements, and the schedules' table size. The schedules are seeded through
 * DynamicSchedules.upsertMany (as an import would: a statement per 1,000); the instances load them at boot.
 */
export const dynamicSchedules: Scenario = {
  name: 'dynamic-schedules',
  title: 'Dynamic schedules: 1,000 / 10,000 / 100,000 stored schedules due together on 3 instances',
  run: async ({ quick, cleanup, sheet, log }) => {
    const { schedules: sizes, everyMs } = quick ? SIZES.quick : SIZES.full;
    for (const schedules of sizes) {
      const caseName = `${formatNumber(schedules)} schedules, ${INSTANCES} instances`;
      log(`dynamic-schedules: ${caseName}`);
      const database = await createBenchDatabase(cleanup);
      const seeded = await seedDynamicSchedules(database.url, schedules, everyMs);
      log(`dynamic-schedules: seeded ${formatNumber(schedules)} schedules in ${Math.round(seeded.ms)} ms, ${seeded.statements} statements`);
      const measureFrom = Math.ceil((Date.now() + bootAllowanceMs(schedules)) / everyMs) * everyMs;
      const measureUntil = measureFrom + settleMs(schedules, everyMs);
      const lines = await Promise.all(
        Array.from({ length: INSTANCES }, (_, index) => {
          const args: DynamicWorkerArguments = {
            url: database.url,
            nodeId: `dynamic-${index}`,
            workMs: WORK_MS,
            changePollMs: CHANGE_POLL_MS,
            measureFrom,
            // From before the claims of the measured instant (they go out claimLeadMs ahead).
            windowFrom: measureFrom - claimLeadMs(schedules) - 2_000,
            measureUntil,
            poolSize: POOL_SIZE,
          };
          // --expose-gc: the heap is read after a full collection, before and after boot.
          return runWorkerProcess<DynamicWorkerLine>(WORKER, args, args.nodeId, cleanup, ['--expose-gc']);
        }),
      );
      const booted = lines.map((output, index) => lineOf(output, 'booted', `dynamic-${index}`));
      const figures = lines.map((output, index) => lineOf(output, 'figures', `dynamic-${index}`));
      const delays = figures.flatMap((figure) => figure.startDelaysMs);
      const statements = figures.reduce((sum, figure) => sum + figure.windowStatements, 0);
      const polls = figures.map((figure) => figure.windowScheduleStatements / Math.max(1, figure.windowPolls));
      const [table] = await database.sql<{ rows: number; succeeded: number; running: number; keys: number }>(
        `SELECT count(*)::int AS rows, count(*) FILTER (WHERE status = 'SUCCESS')::int AS succeeded,
                count(*) FILTER (WHERE status = 'RUNNING')::int AS running, count(DISTINCT "runKey")::int AS keys
         FROM "job-scheduler" WHERE code = 'bench.tenant-task' AND right("runKey", 24) = $1`,
        [new Date(measureFrom).toISOString()],
      );
      const [size] = await database.sql<{ table: number; indexes: number }>(
        `SELECT pg_table_size('"job-schedule"')::float8 AS table, pg_indexes_size('"job-schedule"')::float8 AS indexes`,
      );

      sheet.add(caseName, 'library', 'seeding with upsertMany', 'ms', [seeded.ms]);
      sheet.add(caseName, 'library', 'statements to seed', 'statements', [seeded.statements]);
      sheet.add(
        caseName,
        'library',
        'boot per instance',
        'ms',
        booted.map((line) => line.bootMs),
      );
      const heapPerSchedule = booted.map((line) => ((line.heapBytes ?? Number.NaN) - (line.heapBeforeBytes ?? Number.NaN)) / schedules);
      sheet.add(caseName, 'library', 'heap per schedule per instance (after boot, after a full GC)', 'bytes', heapPerSchedule);
      sheet.add(
        caseName,
        'library',
        'statements at boot per instance',
        'statements',
        booted.map((line) => line.bootStatements),
      );
      // How each instance kept the pace of its claims ahead (the same on every instance by design): an
      // instance whose statements go late wins fewer runs, and the others start more.
      sheet.add(
        caseName,
        'library',
        'claims ahead per instance: statements sent before the instant',
        'statements',
        figures.map((figure) => figure.claimSentMs.length),
      );
      sheet.add(
        caseName,
        'library',
        'claims ahead per instance: first statement sent (after the instant: negative)',
        'ms',
        figures.map((figure) => (figure.claimSentMs.length > 0 ? Math.min(...figure.claimSentMs) : Number.NaN)),
      );
      sheet.add(
        caseName,
        'library',
        'claims ahead per instance: last statement sent (after the instant: negative)',
        'ms',
        figures.map((figure) => (figure.claimSentMs.length > 0 ? Math.max(...figure.claimSentMs) : Number.NaN)),
      );
      sheet.add(caseName, 'library', 'start delay p50', 'ms', [percentile(delays, 50)]);
      sheet.add(caseName, 'library', 'start delay p99', 'ms', [percentile(delays, 99)]);
      sheet.add(
        caseName,
        'library',
        'runs per instance',
        'runs',
        figures.map((figure) => figure.startDelaysMs.length),
      );
      sheet.add(caseName, 'library', 'statements per run (fleet)', 'statements', [statements / schedules]);
      sheet.add(
        caseName,
        'library',
        'Node CPU per occurrence per instance',
        'µs',
        figures.map((figure) => figure.windowCpuMicros / schedules),
      );
      // What the instant's CPU goes to: at 100,000 schedules most of it is young-generation GC (docs/limits.md).
      sheet.add(
        caseName,
        'library',
        'GC in the window per instance (scavenges)',
        'ms',
        figures.map((figure) => figure.windowScavengeMs),
      );
      sheet.add(
        caseName,
        'library',
        'GC share of Node CPU in the window per instance',
        '%',
        figures.map((figure) => (100 * figure.windowGcMs * 1000) / figure.windowCpuMicros),
      );
      sheet.add(
        caseName,
        'library',
        'complete / fail statements per instance, for many runs',
        'statements',
        figures.map((figure) => figure.windowFinalizesBatched),
      );
      // A statement per run: each a batch that failed and was split (before 2026-12-03), or a run that ended alone.
      sheet.add(
        caseName,
        'library',
        'complete / fail statements per instance, for one run',
        'statements',
        figures.map((figure) => figure.windowFinalizesAlone),
      );
      // Claimed and not started when the window ended: left to the take-over, a lease late (docs/limits.md).
      sheet.add(caseName, 'library', 'rows of the instant still RUNNING after the window', 'rows', [table.running]);
      sheet.add(caseName, 'library', 'schedule-table statements per instance per poll', 'statements', polls);
      sheet.add(caseName, 'library', 'job-schedule table + indexes', 'MB', [(size.table + size.indexes) / 1e6]);

      const once = delays.length === schedules && table.rows === schedules && table.succeeded === schedules && table.keys === schedules;
      sheet.goal(
        `${caseName}: every occurrence once`,
        `${formatNumber(schedules)} runs`,
        `${delays.length} runs, ${table.succeeded}/${table.rows} rows SUCCESS`,
        once,
      );
      const seedStatements = Math.ceil(schedules / UPSERT_MANY_CHUNK_ROWS);
      sheet.goal(`${caseName}: statements to seed with upsertMany`, `${seedStatements}`, `${seeded.statements}`, seeded.statements === seedStatements);
      const perRun = statements / schedules;
      sheet.goal(`${caseName}: statements per run across instances`, '≤ 1.5', perRun.toFixed(2), perRun <= 1.5);
      const p99 = percentile(delays, 99);
      // Issue 23: 100,000 schedules start within 5 s (p99); up to 10,000, within 1 s (issue 17).
      const p99GoalMs = schedules >= 100_000 ? 5_000 : 1_000;
      sheet.goal(`${caseName}: start delay p99 after the due instant`, `≤ ${formatNumber(p99GoalMs)} ms`, `${p99.toFixed(0)} ms`, p99 <= p99GoalMs);
      // Judged at 100,000 (issue 23): below it, the application's own heap is a large share of each schedule's.
      const heap = Math.max(...heapPerSchedule);
      if (schedules >= 100_000) sheet.goal(`${caseName}: heap per schedule per instance`, '≤ 2 KB', `${(heap / 1024).toFixed(2)} KB`, heap <= 2_048);
      const boot = Math.max(...booted.map((line) => line.bootMs));
      sheet.goal(`${caseName}: boot (load and arm every schedule) per instance`, '≤ 10 s', `${(boot / 1000).toFixed(1)} s`, boot <= 10_000);
      const cpu = Math.max(...figures.map((figure) => figure.windowCpuMicros / schedules));
      sheet.goal(`${caseName}: Node CPU per occurrence per instance`, '< 1 ms', `${(cpu / 1000).toFixed(3)} ms`, cpu < 1_000);
      const poll = Math.max(...polls);
      sheet.goal(`${caseName}: change polling with no change`, '≤ 1 statement per instance per poll', poll.toFixed(2), poll <= 1);
    }
    return {
      sizes: `${sizes.map(formatNumber).join(' / ')} schedules every ${everyMs / 1000} s, ${WORK_MS} ms of work each, 1 measured due instant after boot, ${INSTANCES} instances as separate processes, pool ${POOL_SIZE} each, change poll ${CHANGE_POLL_MS / 1000} s`,
      variants: { library: 'DynamicSchedulesModule + JobSchedulerModule on TypeORM, default options' },
    };
  },
};
