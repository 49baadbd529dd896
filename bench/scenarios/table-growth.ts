import type { JobSchedulerService } from '../../src/features';
import { createBenchDatabase } from '../support/bench-database';
import type { CleanupStack } from '../support/cleanup';
import { addRunFootprints } from '../support/footprint-figures';
import { formatNumber, formatSpread } from '../support/format';
import { GROWTH_CODE, measureTableSize, nextTickRunKey, seedPastTicks } from '../support/growth-seed';
import { interleave } from '../support/interleave';
import { BENCH_LEASE_MS } from '../support/lease-node';
import { SHIPPED, startLibraryNode } from '../support/library-variants';
import type { FigureSheet } from '../support/report';
import { pairedRatios, percentile } from '../support/statistics';
import { BEFORE_TUNING, SHIPPED_TABLE, TUNED } from '../support/table-setups';
import type { Scenario } from './scenario';

const SIZES = {
  full: { rows: [1e3, 1e5, 1e6], slices: 4, sliceMs: 300, warmUpMs: 300, footprint: { runs: 3_000, ratePerSecond: 250, holdsMs: [0, 2_000], repetitions: 3 } },
  quick: { rows: [1e3, 3e3, 1e4], slices: 1, sliceMs: 150, warmUpMs: 100, footprint: { runs: 1_000, ratePerSecond: 250, holdsMs: [0, 2_000], repetitions: 1 } },
};
const P99_GOAL = 1.5;

interface GrowthSample {
  acquireMs: number[];
  completeMs: number[];
}

interface SeededTable {
  rows: number;
  jobs: JobSchedulerService;
  nextTick: number;
}

const rowsLabel = (rows: number): string => `${rows.toExponential(0).replace('+', '')} rows`;

/** Sequential cycles on one table for `durationMs`, timing acquire and complete apart. */
const measureCycles = async (table: SeededTable, durationMs: number): Promise<GrowthSample> => {
  const sample: GrowthSample = { acquireMs: [], completeMs: [] };
  const deadline = performance.now() + durationMs;
  while (performance.now() < deadline) {
    const runKey = nextTickRunKey(table.nextTick++);
    const sent = performance.now();
    const lock = await table.jobs.acquire({ code: GROWTH_CODE, runKey, leaseMs: BENCH_LEASE_MS, heartbeatMs: 0 });
    const acquired = performance.now();
    if (!lock.acquired || !(await table.jobs.complete(lock))) throw new Error(`table-growth: ${runKey} did not cycle`);
    sample.completeMs.push(performance.now() - acquired);
    sample.acquireMs.push(acquired - sent);
  }
  return sample;
};

const mergeSamples = (parts: GrowthSample[]): GrowthSample => ({
  acquireMs: parts.flatMap((part) => part.acquireMs),
  completeMs: parts.flatMap((part) => part.completeMs),
});

/** A database of its own with `rows` past ticks, its size recorded, and a library node on it. */
const seedTable = async (rows: number, cleanup: CleanupStack, sheet: FigureSheet, log: (message: string) => void): Promise<SeededTable> => {
  const database = await createBenchDatabase(cleanup);
  const seeding = performance.now();
  await seedPastTicks(database, rows);
  log(`table-growth: seeded ${formatNumber(rows)} rows in ${formatNumber((performance.now() - seeding) / 1000)} s`);
  const size = await measureTableSize(database);
  const perMillion = (bytes: number) => ((bytes / size.rows) * 1e6) / 2 ** 20;
  const caseName = rowsLabel(rows);
  const indexBytes = [...size.indexBytes.values()].reduce((sum, bytes) => sum + bytes, 0);
  sheet.add(caseName, SHIPPED.name, 'table per 1e6 rows', 'MiB', [perMillion(size.tableBytes)]);
  for (const [name, bytes] of size.indexBytes) sheet.add(caseName, SHIPPED.name, `index ${name} per 1e6 rows`, 'MiB', [perMillion(bytes)]);
  sheet.add(caseName, SHIPPED.name, 'table + indexes per 1e6 rows', 'MiB', [perMillion(size.tableBytes + indexBytes)]);
  const jobs = await startLibraryNode({ url: database.url, nodeId: `growth-${rows}`, poolSize: 2, cleanup }, SHIPPED);
  return { rows, jobs, nextTick: 0 };
};

export const tableGrowth: Scenario = {
  name: 'table-growth',
  title: 'Table growth (acquire and complete against a table of past ticks)',
  run: async ({ quick, repetitions, cleanup, sheet, log }) => {
    const sizes = quick ? SIZES.quick : SIZES.full;
    const tables: SeededTable[] = [];
    for (const rows of sizes.rows) {
      const table = await seedTable(rows, cleanup, sheet, log);
      await measureCycles(table, sizes.warmUpMs);
      tables.push(table);
    }

    log(`table-growth: ${tables.length} sizes x ${repetitions} x ${sizes.slices} x ${sizes.sliceMs} ms`);
    const results = await interleave(tables, { repetitions, slices: sizes.slices }, (table) => measureCycles(table, sizes.sliceMs), mergeSamples);
    for (const [table, samples] of results) {
      const add = (metric: string, pick: (sample: GrowthSample) => number) => sheet.add(rowsLabel(table.rows), SHIPPED.name, metric, 'ms', samples.map(pick));
      add('p50 acquire', (sample) => percentile(sample.acquireMs, 50));
      add('p99 acquire', (sample) => percentile(sample.acquireMs, 99));
      add('p50 complete', (sample) => percentile(sample.completeMs, 50));
      add('p99 complete', (sample) => percentile(sample.completeMs, 99));
      sheet.add(
        rowsLabel(table.rows),
        SHIPPED.name,
        'cycles per repetition',
        '',
        samples.map((sample) => sample.acquireMs.length),
      );
    }

    const smallest = results.get(tables[0]) ?? [];
    const largest = results.get(tables[tables.length - 1]) ?? [];
    const ratioCase = `${rowsLabel(tables[tables.length - 1].rows)} ÷ ${rowsLabel(tables[0].rows)}`;
    for (const [operation, pick] of [
      ['acquire', (sample: GrowthSample) => sample.acquireMs],
      ['complete', (sample: GrowthSample) => sample.completeMs],
    ] as const) {
      for (const p of [50, 99]) {
        const at = (samples: GrowthSample[]) => samples.map((sample) => percentile(pick(sample), p));
        const ratios = sheet.addRatio(ratioCase, SHIPPED.name, `p${p} ${operation} ratio`, pairedRatios(at(largest), at(smallest)));
        if (p === 99) {
          const verdict = quick ? null : ratios.median <= P99_GOAL;
          sheet.goal(`p99 ${operation}: ${ratioCase}`, `≤ ${P99_GOAL} (median of runs)`, formatSpread(ratios, 'x'), verdict);
        }
      }
    }
    const largestSize = sheet.figures.find(
      (figure) => figure.case === rowsLabel(tables[tables.length - 1].rows) && figure.metric === 'table + indexes per 1e6 rows',
    );
    sheet.goal('table + indexes per 1e6 rows', 'reported', largestSize ? `${formatNumber(largestSize.spread.median)} MiB` : 'n/a', null);

    await addRunFootprints(sheet, sizes.footprint, log);

    if (quick) sheet.note(`Quick mode seeds at most ${formatNumber(sizes.rows[sizes.rows.length - 1])} rows: the 1e6 goal is judged by the full run only.`);
    sheet.note(
      'Seeded rows: one SUCCESS row per past minute tick of one code, with the lock keys the library computes (checked against buildLockKey), then VACUUM ANALYZE and CHECKPOINT. Measured cycles take the following ticks, as the scheduler does. Sizes per 1e6 rows at 1e3 rows are mostly fixed page overhead.',
    );
    return {
      sizes: `${sizes.rows.map(rowsLabel).join(', ')}, a database each; 1 caller, sequential cycles, pool 2; ${repetitions} repetitions of ${sizes.slices} interleaved slices of ${sizes.sliceMs} ms per size. Footprint: ${formatNumber(sizes.footprint.runs)} full cycles at ${sizes.footprint.ratePerSecond}/s on a fresh database per setup and run length, ${sizes.footprint.repetitions} interleaved repetitions`,
      variants: {
        [SHIPPED.name]: SHIPPED.description,
        [BEFORE_TUNING.name]: BEFORE_TUNING.description,
        [TUNED.name]: TUNED.description,
        [SHIPPED_TABLE.name]: SHIPPED_TABLE.description,
      },
    };
  },
};
