import type { JobSchedulerService } from '../../src/features';
import { createBenchDatabase, openWalProbe } from '../support/bench-database';
import { acquiresBetween, runFullCycle, startChurnLoad } from '../support/churn-load';
import {
  arrivalsPerSecond,
  besidePasses,
  type BesidePasses,
  type KeepUpWindow,
  measureKeepUp,
  type PruningCondition,
  sliceByPruning,
  type Span,
  waitUntilCaughtUp,
  WITH_PRUNING,
  WITH_UNPACED_PRUNING,
  WITHOUT_PRUNING,
} from '../support/churn-windows';
import { type CleanupStack, withCleanup } from '../support/cleanup';
import { perSecond, runClosedLoop } from '../support/closed-loop';
import { sleep } from '../support/deferred';
import { formatNumber, formatSpread } from '../support/format';
import { SHIPPED, startLibraryNode } from '../support/library-variants';
import type { FigureSheet } from '../support/report';
import { seedRetainedHistory } from '../support/retained-history';
import { startRetentionPruner } from '../support/retention-pruner';
import { pairedRatios, percentile, ratioOfMediansInterval, spread } from '../support/statistics';
import { BEFORE_TUNING, SHIPPED_TABLE, type TableSetup } from '../support/table-setups';
import { openTableProbe } from '../support/table-stats';
import type { Scenario } from './scenario';

const NODES = 4;
/** TypeORM's (and pg's) default pool size. */
const POOL_SIZE = 10;
const CALIBRATION_CALLERS = 32;
/** A rate above this share of the measured maximum is not sustained: arrivals would only queue. */
const HEADROOM = 0.8;
/** A capped rate is tried down in these steps until a probe of it shows the machine keeps up. */
const STEP_DOWN = 0.8;
/** A probe keeps up when it starts every run and its acquire p50 stays at or below this (an open loop that keeps up waits for nothing). */
const KEEPS_UP_P50_MS = 20;
/** The longest a seeded history's backlog may take to clear before the windows start anyway. */
const CATCH_UP_TIMEOUT_MS = 120_000;
const P99_GOAL = 1.1;
/** Rows past the horizon (+ 2 passes) the table may hold at a window's end: one default batch. */
const BOUND_ROWS = 1_000;
/** The slices' conditions, interleaved: the goal's two, and unpaced pruning to show what the pacing changes. */
const CONDITIONS = [WITH_PRUNING, WITH_UNPACED_PRUNING, WITHOUT_PRUNING];
const SIZES = {
  full: {
    horizonMs: 10_000,
    retainedRows: 1e6,
    holdMs: 1_000,
    everyMs: 1_000,
    windows: 5,
    windowMs: 4_000,
    slices: 6,
    sliceMs: 1_500,
    calibrationMs: 2_000,
    probeMs: 4_000,
  },
  quick: {
    horizonMs: 2_000,
    retainedRows: 3e4,
    holdMs: 200,
    everyMs: 500,
    windows: 2,
    windowMs: 1_000,
    slices: 1,
    sliceMs: 1_000,
    calibrationMs: 500,
    probeMs: 1_000,
  },
};
type Sizes = (typeof SIZES)['full'];

/**
 * The soak's arrival rate, ten times it, and the soak's rate over a table that keeps a long
 * history, with and without migration 0004 (its "createdAt" index is what prune reads by).
 */
interface ChurnCase {
  target: number;
  /** Finished rows already in the table, ageing out at the arrival rate (0: a table of one horizon). */
  retained: number;
  setup: TableSetup;
}

/** The soak's rate: ~250 new rows a second (issue 14). */
const SOAK_RATE = 250;

const casesFor = (sizes: Sizes): ChurnCase[] => [
  { target: SOAK_RATE, retained: 0, setup: SHIPPED_TABLE },
  { target: 10 * SOAK_RATE, retained: 0, setup: SHIPPED_TABLE },
  { target: SOAK_RATE, retained: sizes.retainedRows, setup: SHIPPED_TABLE },
  { target: SOAK_RATE, retained: sizes.retainedRows, setup: BEFORE_TUNING },
];

const caseLabel = ({ target, retained, setup }: ChurnCase): string =>
  `${formatNumber(target)} runs/s${retained > 0 ? `, ${retained.toExponential(0).replace('+', '')} rows retained` : ''}${setup === SHIPPED_TABLE ? '' : `, ${setup.name}`}`;

/** Full cycles back to back from many callers: the most this machine runs, which caps the rate tried. */
const calibrate = async (nodes: readonly JobSchedulerService[], durationMs: number): Promise<number> => {
  const cycles = (caller: number) => runFullCycle(nodes[caller % nodes.length], 0, () => undefined);
  // The first pass opens every pooled connection and prepares the statements on it.
  await runClosedLoop(CALIBRATION_CALLERS, durationMs, cycles);
  return perSecond(await runClosedLoop(CALIBRATION_CALLERS, durationMs, cycles));
};

/** One probe of a capped rate: runs not started and the acquire p50 after its first quarter. */
interface RateProbe {
  rate: number;
  skipped: number;
  p50: number;
}

const describeProbes = (probes: readonly RateProbe[]): string =>
  probes.map((probe) => `${formatNumber(probe.rate)}/s: ${formatNumber(probe.skipped)} runs not started, acquire p50 ${formatNumber(probe.p50)} ms`).join('; ');

const maxInFlightAt = (rate: number, sizes: Sizes): number => Math.ceil((rate * (sizes.holdMs + 2_000)) / 1000);

/**
 * The highest rate this machine generates: from HEADROOM of the closed-loop maximum down in steps
 * of STEP_DOWN, the first at which a probe of the open loop starts every run with its acquire p50
 * at or below KEEPS_UP_P50_MS (down to the soak's rate at the least). A rate the machine does not
 * keep up with measures its queue, not what pruning adds (at 80% of saturation, 2% more work is
 * about 10% more waiting).
 */
const keptUpRate = async (nodes: readonly JobSchedulerService[], ceiling: number, sizes: Sizes): Promise<{ rate: number; probes: RateProbe[] }> => {
  const probes: RateProbe[] = [];
  for (let rate = ceiling; ; rate = Math.max(SOAK_RATE, Math.floor((rate * STEP_DOWN) / 10) * 10)) {
    const begun = performance.now();
    const load = startChurnLoad(nodes, { ratePerSecond: rate, holdMs: sizes.holdMs, maxInFlight: maxInFlightAt(rate, sizes) });
    await sleep(sizes.probeMs);
    await load.stop();
    const probe = { rate, skipped: load.skipped(), p50: percentile(acquiresBetween(load.acquires, begun + sizes.probeMs / 4, Number.POSITIVE_INFINITY), 50) };
    probes.push(probe);
    if ((probe.skipped === 0 && probe.p50 <= KEEPS_UP_P50_MS) || rate <= SOAK_RATE) return { rate, probes };
  }
};

interface CaseRun {
  /** How long retention took to delete the seeded history's backlog, before the windows. */
  catchUpMs: number;
  /** Full cycles per second of the closed-loop calibration. */
  maximum: number;
  /** The probes of a capped rate, highest first (none when the target was below the cap). */
  probes: RateProbe[];
  rate: number;
  horizonMs: number;
  windows: KeepUpWindow[];
  arrivals: number[];
  p50: Map<PruningCondition, number[]>;
  p99: Map<PruningCondition, number[]>;
  /** The p99 of the paused slice before each slice with pruning (in the order of p99's). */
  p99PausedBeforeWith: number[];
  /** The acquires of each pruning condition's slices, sent during a prune pass or not. */
  beside: Map<PruningCondition, BesidePasses>;
  skipped: number;
  walPerRun: number;
  hotShare: number;
  autovacuums: number;
  autoanalyzes: number;
  indexScans: Map<string, number>;
}

const measureCase = async (
  churnCase: ChurnCase,
  sizes: Sizes,
  repetitions: number,
  cleanup: CleanupStack,
  log: (message: string) => void,
): Promise<CaseRun> => {
  const database = await createBenchDatabase(cleanup, churnCase.setup.migrations);
  const table = await openTableProbe(database, cleanup);
  const walPosition = await openWalProbe(database, cleanup);
  const nodes: JobSchedulerService[] = [];
  for (let index = 0; index < NODES; index++) {
    nodes.push(await startLibraryNode({ url: database.url, nodeId: `churn-${index}`, poolSize: POOL_SIZE, cleanup }, SHIPPED));
  }
  const retention = await startLibraryNode({ url: database.url, nodeId: 'retention', poolSize: 2, cleanup }, SHIPPED);
  const maximum = await calibrate(nodes, sizes.calibrationMs);
  const ceiling = Math.floor((maximum * HEADROOM) / 10) * 10;
  const { rate, probes } = churnCase.target <= ceiling ? { rate: churnCase.target, probes: [] } : await keptUpRate(nodes, ceiling, sizes);
  log(
    `retention-churn: ${caseLabel(churnCase)}: closed-loop maximum ${formatNumber(maximum)}/s, running at ${rate}/s${probes.length > 0 ? ` (probes: ${describeProbes(probes)})` : ''}`,
  );
  const horizonMs = churnCase.retained > 0 ? await seedRetainedHistory(database, churnCase.retained, rate) : sizes.horizonMs;

  const before = await table.stats();
  const walBefore = await walPosition();
  const load = startChurnLoad(nodes, { ratePerSecond: rate, holdMs: sizes.holdMs, maxInFlight: maxInFlightAt(rate, sizes) });
  const pruner = startRetentionPruner(retention, { horizonMs, everyMs: sizes.everyMs });
  try {
    // A table of one horizon fills first; a seeded history is there, with a backlog to clear.
    const catchUpMs = churnCase.retained > 0 ? await waitUntilCaughtUp(pruner, CATCH_UP_TIMEOUT_MS) : 0;
    await sleep((churnCase.retained > 0 ? 0 : horizonMs) + sizes.holdMs + 2 * sizes.everyMs);
    const windows = await measureKeepUp({ pruner, table, overdueAfterMs: horizonMs + 2 * sizes.everyMs }, sizes.windows, sizes.windowMs);
    const slices = await sliceByPruning(pruner, CONDITIONS, { repetitions, slices: sizes.slices, sliceMs: sizes.sliceMs });
    pruner.resume();
    await load.stop();
    const walPerRun = Number((await walPosition()) - walBefore) / load.started();
    const after = await table.stats();
    // One figure per slice.
    const inSpan = (span: Span, p: number) => percentile(acquiresBetween(load.acquires, span.from, span.to), p);
    const at = (p: number) => new Map(CONDITIONS.map((condition) => [condition, (slices.spans.get(condition) ?? []).map((span) => inSpan(span, p))]));
    const withSpans = slices.spans.get(WITH_PRUNING) ?? [];
    const updates = after.updates - before.updates;
    return {
      catchUpMs,
      maximum,
      probes,
      rate,
      horizonMs,
      windows,
      arrivals: windows.map((window) => arrivalsPerSecond(load, window)),
      p50: at(50),
      p99: at(99),
      p99PausedBeforeWith: withSpans.map((span) => inSpan(slices.pausedBefore.get(span) ?? span, 99)),
      beside: new Map(
        [WITH_PRUNING, WITH_UNPACED_PRUNING].map((condition) => [condition, besidePasses(load.acquires, slices.spans.get(condition) ?? [], pruner.passes)]),
      ),
      skipped: load.skipped(),
      walPerRun,
      hotShare: updates > 0 ? (after.hotUpdates - before.hotUpdates) / updates : Number.NaN,
      autovacuums: after.autovacuums - before.autovacuums,
      autoanalyzes: after.autoanalyzes - before.autoanalyzes,
      indexScans: new Map([...after.indexScans].map(([name, scans]) => [name, scans - (before.indexScans.get(name) ?? 0)])),
    };
  } finally {
    await pruner.stop();
    await load.stop().catch(() => undefined);
  }
};

const report = (sheet: FigureSheet, churnCase: ChurnCase, run: CaseRun, quick: boolean): void => {
  const caseName = caseLabel(churnCase);
  const variant = SHIPPED.name;
  const windows = (metric: string, unit: string, pick: (window: KeepUpWindow) => number) => sheet.add(caseName, variant, metric, unit, run.windows.map(pick));
  sheet.add(caseName, variant, 'rate run', 'runs/s', [run.rate]);
  sheet.add(caseName, variant, 'horizon', 's', [run.horizonMs / 1000]);
  if (churnCase.retained > 0) sheet.add(caseName, variant, 'seeded backlog cleared after (before the windows)', 's', [run.catchUpMs / 1000]);
  const arrivals = sheet.add(caseName, variant, 'arrivals', 'runs/s', run.arrivals);
  const deletions = windows('deletions', 'rows/s', (window) => window.deletionsPerSecond);
  const capacity = windows('prune capacity (rows per second of prune passes, rests included)', 'rows/s', (window) => window.pruneCapacity);
  const longest = windows('longest prune pass (statements and rests)', 'ms', (window) => window.longestPassMs);
  const rows = windows('rows in table', '', (window) => window.rows);
  const overdue = windows('rows past the horizon + 2 passes', '', (window) => window.overdueRows);
  for (const condition of CONDITIONS) sheet.add(caseName, condition.name, 'p50 acquire', 'ms', run.p50.get(condition) ?? []);
  const withP99 = sheet.add(caseName, WITH_PRUNING.name, 'p99 acquire', 'ms', run.p99.get(WITH_PRUNING) ?? []);
  const unpacedP99 = sheet.add(caseName, WITH_UNPACED_PRUNING.name, 'p99 acquire', 'ms', run.p99.get(WITH_UNPACED_PRUNING) ?? []);
  const withoutP99 = sheet.add(caseName, WITHOUT_PRUNING.name, 'p99 acquire', 'ms', run.p99.get(WITHOUT_PRUNING) ?? []);
  const pairs = sheet.addRatio(
    caseName,
    'with ÷ without pruning',
    'p99 acquire ratio, adjacent slices',
    pairedRatios(run.p99.get(WITH_PRUNING) ?? [], run.p99PausedBeforeWith),
  );
  const ratio = withP99.median / withoutP99.median;
  const interval = ratioOfMediansInterval(withP99.samples, withoutP99.samples);
  const unpacedRatio = unpacedP99.median / withoutP99.median;
  const unpacedInterval = ratioOfMediansInterval(unpacedP99.samples, withoutP99.samples);
  sheet.add(caseName, variant, 'runs not started (generator behind)', '', [run.skipped]);
  sheet.add(caseName, variant, 'HOT updates (heartbeat + complete)', '%', [run.hotShare * 100]);
  sheet.add(caseName, variant, 'WAL per run (cycle, retention, autovacuum)', 'bytes', [run.walPerRun]);
  sheet.add(caseName, variant, 'autovacuum runs', '', [run.autovacuums]);
  sheet.add(caseName, variant, 'autoanalyze runs', '', [run.autoanalyzes]);
  for (const [name, scans] of run.indexScans) sheet.add(caseName, variant, `index scans of ${name}`, '', [scans]);

  const capped =
    run.rate < churnCase.target
      ? ` (generated at most ${formatNumber(run.rate)}/s, the highest rate this machine kept up with: of this machine's closed-loop maximum of ${formatNumber(run.maximum)} full cycles/s, ${HEADROOM * 100}% and down in steps of ${Math.round((1 - STEP_DOWN) * 100)}%, probes ${describeProbes(run.probes)}; the target rate was not reached)`
      : '';
  sheet.goal(
    `arrival rate, ${caseName}`,
    `≥ 95% of ${formatNumber(churnCase.target)} runs/s`,
    `${formatSpread(arrivals, 'runs/s')}${capped}`,
    quick ? null : arrivals.median >= 0.95 * churnCase.target,
  );
  const keepsUp = spread(run.windows.map((window, index) => window.pruneCapacity / run.arrivals[index]));
  sheet.goal(
    `prune rate ≥ arrival rate, ${caseName}`,
    `rows deleted per second of pruning ≥ runs arriving per second (${formatNumber(arrivals.median)}/s reached), every window`,
    `${formatSpread(capacity, 'rows/s')} vs ${formatSpread(arrivals, 'runs/s')}; deleted ${formatSpread(deletions, 'rows/s')}`,
    keepsUp.min >= 1,
  );
  if (run.rate < churnCase.target) {
    // Arrivals could not be generated at the target rate: what pruning could sustain is its capacity.
    sheet.goal(
      `prune capacity ≥ ${formatNumber(churnCase.target)} rows/s (the rate not reached), ${caseName}`,
      `rows deleted per second of pruning ≥ ${formatNumber(churnCase.target)}, every window (measured under ${formatNumber(arrivals.median)} arrivals/s)`,
      formatSpread(capacity, 'rows/s'),
      capacity.min >= churnCase.target,
    );
  }
  sheet.goal(
    `table bounded, ${caseName}`,
    `rows past the horizon + 2 passes ≤ ${formatNumber(BOUND_ROWS)} (one batch), every window`,
    `${formatNumber(overdue.max)} (rows in table ${formatNumber(rows.min)}–${formatNumber(rows.max)})`,
    overdue.max <= BOUND_ROWS,
  );
  sheet.goal(
    `acquire p99 with pruning ≤ ${P99_GOAL} × without, ${caseName}`,
    `≤ ${P99_GOAL} (median p99 of the slices with ÷ without)`,
    `${formatNumber(ratio)}x (${formatNumber(withP99.median)} ÷ ${formatNumber(withoutP99.median)} ms; 95% bootstrap interval ${formatNumber(interval.low)}–${formatNumber(interval.high)}x; adjacent pairs ${formatSpread(pairs, 'x')})`,
    quick ? null : ratio <= P99_GOAL,
  );
  sheet.goal(
    `acquire p99 with unpaced pruning (batches of 1,000 back to back) ÷ without, ${caseName}`,
    'reported (what the pacing changes, measured in the same run)',
    `${formatNumber(unpacedRatio)}x (${formatNumber(unpacedP99.median)} ÷ ${formatNumber(withoutP99.median)} ms; 95% bootstrap interval ${formatNumber(unpacedInterval.low)}–${formatNumber(unpacedInterval.high)}x)`,
    null,
  );
  const besideText = (condition: PruningCondition) => {
    const { during, outside } = run.beside.get(condition) ?? { during: [], outside: [] };
    const at = (values: number[]) => `p50 ${formatNumber(percentile(values, 50))} / p90 ${formatNumber(percentile(values, 90))} ms`;
    return `${formatNumber(during.length)} acquires sent during a pass, ${at(during)} (the other ${formatNumber(outside.length)}: ${at(outside)})`;
  };
  sheet.goal(
    `acquires beside a prune pass, ${caseName}`,
    'reported (latency of the acquires sent while a pass ran, against the others of the same slices)',
    `paced: ${besideText(WITH_PRUNING)}; unpaced: ${besideText(WITH_UNPACED_PRUNING)}`,
    null,
  );
  sheet.goal(`longest prune pass (prune's defaults: batches of 1,000, dutyCycle 0.5), ${caseName}`, 'reported', `${formatNumber(longest.max)} ms`, null);
};

export const retentionChurn: Scenario = {
  name: 'retention-churn',
  title: 'Retention under churn (full lease cycles at a steady arrival rate, pruned as they age)',
  run: async ({ quick, repetitions, sheet, log }) => {
    const sizes = quick ? SIZES.quick : SIZES.full;
    const cases = casesFor(sizes);
    for (const churnCase of cases) {
      const run = await withCleanup((caseCleanup) => measureCase(churnCase, sizes, repetitions, caseCleanup, log));
      report(sheet, churnCase, run, quick);
    }
    sheet.note(
      `Each run: acquire, heartbeat ${sizes.holdMs / 2} ms later, complete ${sizes.holdMs / 2} ms after that, of a fresh occurrence (50 codes, ISO 8601 runKeys), started on ${NODES} library nodes in turn (pool ${POOL_SIZE} each) at a fixed rate (open loop). Retention: a fifth node calls prune({ olderThan: horizon }) with prune's defaults (batches of 1,000, dutyCycle 0.5: after each full batch a rest as long as the batch), which deletes batch after batch until one comes back short, then waits ${sizes.everyMs} ms, as JobRetention does every period. "prune capacity" is rows deleted per second of these passes, rests included.`,
    );
    sheet.note(
      `Horizon ${sizes.horizonMs / 1000} s: the table holds one horizon of runs. "rows retained": ${formatNumber(sizes.retainedRows)} finished runs seeded first, their ages spread over a horizon of rows ÷ rate and scrambled across the heap (as after days of retention and autovacuum), so that they age out at the arrival rate anywhere in the table (ages count from the start of the seeding transaction: the windows start once retention has deleted that backlog): before migration 0004 the prune statement has no index to find them by, and each batch that comes back short reads the whole table; with it, prune reads the rows older than the cutoff by IDX_job_scheduler_created_at.`,
    );
    sheet.note(
      `A rate above ${HEADROOM * 100}% of the machine's closed-loop maximum (${CALIBRATION_CALLERS} callers, full cycles back to back, measured first on each database) is capped: the load generator, the nodes and PostgreSQL share the same 2 cores, and beyond what they keep up with arrivals only queue. The cap is the highest rate the machine keeps up with: ${HEADROOM * 100}% of the maximum, then down in steps of ${Math.round((1 - STEP_DOWN) * 100)}% until a probe of ${sizes.probeMs / 1000} s at that rate starts every run and its acquire p50 (after the probe's first quarter) is at most ${KEEPS_UP_P50_MS} ms. Until 2026-12-05 the cap was ${HEADROOM * 100}% of the maximum, unprobed: on a host where that rate saturated (runs not started, acquire p90 near a second), the goal's ratio measured queueing, whose delay grows by about the 10% allowed when pruning adds 2% of work at 80% utilisation.`,
    );
    sheet.note(
      `Keep-up windows run with retention on throughout (after a warm-up); p50 / p99 acquire come from slices of the same load with retention on (paced, prune's defaults), on unpaced (batches of 1,000, dutyCycle 1) and paused: ${sizes.slices} round${sizes.slices === 1 ? '' : 's'} per repetition of a paused slice before each pruning condition, those in rotating order (paused, paced, paused, unpaced; paused, unpaced, paused, paced; ...), ${sizes.sliceMs / 1000} s each, one figure per slice. The goal compares the median of the slices' p99 with and without pruning: this shared machine stalls for 100–500 ms now and then, with or without pruning, and such a stall makes one slice's p99, so a ratio of adjacent slices (also shown: each slice with pruning ÷ the paused one before it) swings with them where the medians hold. The 95% interval of that ratio (bootstrap over the slices) says how far this run's medians can be trusted: an interval that straddles ${P99_GOAL} does not settle the goal either way, whatever the median ratio says. Every slice with pruning, paced or not, first deletes what piled up during the paused slice before it: a burst, as a periodic retention pass makes (until 2026-12-05 the slices rotated as paced, unpaced, paused, so only the paced ones opened on a backlog). WAL per run is the server WAL over the whole load (cycles, retention deletes, autovacuum) divided by the runs. "Acquires beside a prune pass" splits the acquires of the slices with pruning by whether a pass (statements and rests) was running when each was sent: a stall of the machine falls on both groups alike, so the difference is what a pass does to the acquires beside it.`,
    );
    return {
      sizes: `${cases.map(caseLabel).join('; ')}, a database each; ${NODES} nodes (pool ${POOL_SIZE}) + a retention node (pool 2); ${sizes.windows} keep-up windows of ${sizes.windowMs / 1000} s; ${repetitions} repetitions of ${sizes.slices} rounds of ${2 * (CONDITIONS.length - 1)} interleaved slices of ${sizes.sliceMs / 1000} s (a paused one before each with pruning)`,
      variants: {
        [SHIPPED.name]: `${SHIPPED.description}; the table ${SHIPPED_TABLE.description} (the cases marked "${BEFORE_TUNING.name}": ${BEFORE_TUNING.description})`,
        [WITH_PRUNING.name]: 'acquires of the load while retention runs',
        [WITH_UNPACED_PRUNING.name]: 'acquires of the same load while retention runs batches of 1,000 back to back (dutyCycle 1), as before the option',
        [WITHOUT_PRUNING.name]: 'acquires of the same load while retention is paused',
      },
    };
  },
};
