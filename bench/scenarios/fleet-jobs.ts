import { join } from 'node:path';
import { createBenchDatabase } from '../support/bench-database';
import type { CleanupStack } from '../support/cleanup';
import type { FleetWorkerArguments, FleetWorkerLine } from '../support/fleet-jobs-worker';
import { formatNumber } from '../support/format';
import { percentile } from '../support/statistics';
import { lineOf, runWorkerProcess } from '../support/worker-process';
import type { Scenario } from './scenario';

const WORKER = join(__dirname, '..', 'support', 'fleet-jobs-worker.ts');
const EVERY_MS = 10_000;
interface FleetCase {
  instances: number;
  claimAheadMs?: number;
}

/** Instances per case, and claimAheadMs (undefined: the default, 2 s ahead; 0: claimed at the due instant). */
const SIZES = {
  full: { jobs: 1_000, cases: [{ instances: 1 }, { instances: 3 }, { instances: 3, claimAheadMs: 0 }] as FleetCase[], measuredInstants: 3 },
  quick: { jobs: 100, cases: [{ instances: 3 }, { instances: 3, claimAheadMs: 0 }] as FleetCase[], measuredInstants: 1 },
};
/** TypeORM's (and pg's) default pool size. */
const POOL_SIZE = 10;
/** Time for every instance to boot (ts-node compiles the worker) before the first measured instant. */
const BOOT_ALLOWANCE_MS = 20_000;

/** Starts one instance; resolves with its two lines (booted, figures) once it has exited. */
const runInstance = async (options: FleetWorkerArguments, cleanup: CleanupStack) => {
  const lines = await runWorkerProcess<FleetWorkerLine>(WORKER, options, options.nodeId, cleanup);
  return { booted: lineOf(lines, 'booted', options.nodeId), figures: lineOf(lines, 'figures', options.nodeId) };
};

/**
 * `jobs` declared jobs due every 10 s, on 1 and 3 instances (separate processes, a pool of 10
 * each, one database): statements at boot, start delay after the due instant (p50 / p99 over
 * every measured run), statements per run across the fleet, Node CPU per occurrence per
 * instance, and every occurrence exactly once (checked in the table).
 */
export const fleetJobs: Scenario = {
  name: 'fleet-jobs',
  title: 'Fleet: 1,000 declared jobs due at the same instants on 1 and 3 instances',
  run: async ({ quick, cleanup, sheet, log }) => {
    const { jobs, cases, measuredInstants } = quick ? SIZES.quick : SIZES.full;
    for (const { instances: count, claimAheadMs } of cases) {
      const ahead = claimAheadMs === undefined ? '' : `, claimAheadMs ${formatNumber(claimAheadMs)}${claimAheadMs === 0 ? ' (claimed at the instant)' : ''}`;
      const caseName = `${formatNumber(jobs)} jobs, ${count} instance${count === 1 ? '' : 's'}${ahead}`;
      log(`fleet-jobs: ${caseName}`);
      const database = await createBenchDatabase(cleanup);
      const measureFrom = Math.ceil((Date.now() + BOOT_ALLOWANCE_MS) / EVERY_MS) * EVERY_MS;
      const lastMeasured = measureFrom + (measuredInstants - 1) * EVERY_MS;
      const measureUntil = lastMeasured + EVERY_MS / 2;
      const results = await Promise.all(
        Array.from({ length: count }, (_, index) =>
          runInstance(
            { url: database.url, nodeId: `fleet-${index}`, jobs, every: `${EVERY_MS / 1000}s`, measureFrom, measureUntil, poolSize: POOL_SIZE, claimAheadMs },
            cleanup,
          ),
        ),
      );
      const delays = results.flatMap((result) => result.figures.startDelaysMs);
      const runs = jobs * measuredInstants;
      const statements = results.reduce((sum, result) => sum + result.figures.windowStatements, 0);
      const cpuMicros = results.map((result) => result.figures.windowCpuMicros / runs);
      const [table] = await database.sql<{ rows: number; succeeded: number; keys: number }>(
        `SELECT count(*)::int AS rows, count(*) FILTER (WHERE status = 'SUCCESS')::int AS succeeded,
                count(DISTINCT (code, "runKey"))::int AS keys
         FROM "job-scheduler" WHERE "runKey" >= $1 AND "runKey" <= $2`,
        [new Date(measureFrom).toISOString(), new Date(lastMeasured).toISOString()],
      );

      sheet.add(
        caseName,
        'library',
        'statements at boot per instance',
        'statements',
        results.map((result) => result.booted.bootStatements),
      );
      sheet.add(
        caseName,
        'library',
        'history reads at boot per instance',
        'statements',
        results.map((result) => result.booted.historyStatements),
      );
      sheet.add(caseName, 'library', 'start delay p50', 'ms', [percentile(delays, 50)]);
      sheet.add(caseName, 'library', 'start delay p99', 'ms', [percentile(delays, 99)]);
      sheet.add(
        caseName,
        'library',
        'runs per instance',
        'runs',
        results.map((result) => result.figures.startDelaysMs.length),
      );
      sheet.add(caseName, 'library', 'statements per run (fleet)', 'statements', [statements / runs]);
      sheet.add(caseName, 'library', 'Node CPU per occurrence per instance', 'µs', cpuMicros);

      const once = delays.length === runs && table.rows === runs && table.succeeded === runs && table.keys === runs;
      sheet.goal(
        `${caseName}: every occurrence once`,
        `${formatNumber(runs)} runs`,
        `${delays.length} runs, ${table.succeeded}/${table.rows} rows SUCCESS`,
        once,
      );
      const history = Math.max(...results.map((result) => result.booted.historyStatements));
      sheet.goal(`${caseName}: missed-history at boot`, '1 statement per instance', `${history}`, history === 1);
      const p99 = percentile(delays, 99);
      // The goal is the default configuration's; other cases are shown beside it.
      if (claimAheadMs === undefined) sheet.goal(`${caseName}: start delay p99 after the due instant`, '≤ 100 ms', `${p99.toFixed(0)} ms`, p99 <= 100);
      else sheet.goal(`${caseName}: start delay p99 after the due instant`, 'reported', `${p99.toFixed(0)} ms`, null);
    }
    return {
      sizes: `${formatNumber(jobs)} jobs every ${EVERY_MS / 1000} s, ${measuredInstants} measured due instant(s) after a warm-up, pool ${POOL_SIZE} per instance, instances as separate processes`,
      variants: { library: 'SchedulingModule + JobSchedulerModule on TypeORM, default options (claimAheadMs 2 s; 0 where the case says so)' },
    };
  },
};
