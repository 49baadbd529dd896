import { withCleanup } from './cleanup';
import { interleave } from './interleave';
import { type AcquiredRun, type LeaseNode, type LeaseVariant, startNodes } from './lease-node';
import type { FigureSheet } from './report';
import { freshRunKey } from './run-keys';
import { percentile } from './statistics';
import { countWireStatements } from './wire-statements';

const CODE = 'contended';

/** Ticks of one code raced by every node, back to back. */
export interface TickResult {
  ticks: number;
  elapsedMs: number;
  /** From the first acquire sent to the winner's complete returned. */
  tickLatenciesMs: number[];
  loserLatenciesMs: number[];
  /** Ticks that did not have exactly one winner (must stay 0). */
  ticksWithoutOneWinner: number;
  statements: number;
}

interface Attempt {
  run: AcquiredRun | undefined;
  latencyMs: number;
}

const attempt = async (node: LeaseNode, runKey: string): Promise<Attempt> => {
  const sent = performance.now();
  const run = await node.acquire(CODE, runKey);
  return { run, latencyMs: performance.now() - sent };
};

/** Every node races each tick (a fresh runKey), as every node of a cluster does when a job is due. */
const raceTicks = async (nodes: readonly LeaseNode[], durationMs: number, prefix: string): Promise<TickResult> => {
  const result: TickResult = { ticks: 0, elapsedMs: 0, tickLatenciesMs: [], loserLatenciesMs: [], ticksWithoutOneWinner: 0, statements: 0 };
  const { statements } = await countWireStatements(async () => {
    const started = performance.now();
    const deadline = started + durationMs;
    while (performance.now() < deadline) {
      const runKey = freshRunKey(prefix);
      const tickStarted = performance.now();
      const attempts = await Promise.all(nodes.map((node) => attempt(node, runKey)));
      const winners = attempts.flatMap(({ run }) => (run ? [run] : []));
      for (const { run, latencyMs } of attempts) if (!run) result.loserLatenciesMs.push(latencyMs);
      if (winners.length !== 1) result.ticksWithoutOneWinner++;
      await Promise.all(winners.map((run) => run.complete()));
      result.tickLatenciesMs.push(performance.now() - tickStarted);
      result.ticks++;
    }
    result.elapsedMs = performance.now() - started;
  });
  result.statements = statements;
  return result;
};

const mergeTicks = (parts: readonly TickResult[]): TickResult => ({
  ticks: parts.reduce((sum, part) => sum + part.ticks, 0),
  elapsedMs: parts.reduce((sum, part) => sum + part.elapsedMs, 0),
  tickLatenciesMs: parts.flatMap((part) => part.tickLatenciesMs),
  loserLatenciesMs: parts.flatMap((part) => part.loserLatenciesMs),
  ticksWithoutOneWinner: parts.reduce((sum, part) => sum + part.ticksWithoutOneWinner, 0),
  statements: parts.reduce((sum, part) => sum + part.statements, 0),
});

export const ticksPerSecond = (result: TickResult): number => result.ticks / (result.elapsedMs / 1000);

export interface TickSizes {
  repetitions: number;
  slices: number;
  sliceMs: number;
}

export type TickResults = Map<LeaseVariant, TickResult[]>;

/** Warms every variant's nodes (connections, prepared statements), then races ticks, interleaved. */
export const measureTicks = async (nodes: ReadonlyMap<LeaseVariant, LeaseNode[]>, sizes: TickSizes, warmUpMs: number): Promise<TickResults> => {
  for (const [variant, group] of nodes) await raceTicks(group, warmUpMs, `${variant.name}-warm`);
  return interleave([...nodes.keys()], sizes, (variant) => raceTicks(nodes.get(variant) ?? [], sizes.sliceMs, variant.name), mergeTicks);
};

/** Starts `count` nodes of every variant (pools of `poolSize`), measures their ticks with measureTicks, and closes the nodes. */
export const measureTicksOnNodes = (
  variants: readonly LeaseVariant[],
  count: number,
  options: { url: string; poolSize: number; sizes: TickSizes; warmUpMs: number },
): Promise<TickResults> =>
  withCleanup(async (cleanup) => {
    const nodes = new Map<LeaseVariant, LeaseNode[]>();
    for (const variant of variants) nodes.set(variant, await startNodes(variant, count, { url: options.url, poolSize: options.poolSize, cleanup }));
    return measureTicks(nodes, options.sizes, options.warmUpMs);
  });

export const addTickFigures = (sheet: FigureSheet, caseName: string, results: TickResults): void => {
  for (const [variant, runs] of results) {
    const add = (metric: string, unit: string, pick: (run: TickResult) => number) => sheet.add(caseName, variant.name, metric, unit, runs.map(pick));
    add('ticks/s', '', ticksPerSecond);
    add('p50 tick', 'ms', (run) => percentile(run.tickLatenciesMs, 50));
    add('p99 tick', 'ms', (run) => percentile(run.tickLatenciesMs, 99));
    add('p50 loser acquire', 'ms', (run) => percentile(run.loserLatenciesMs, 50));
    add('p99 loser acquire', 'ms', (run) => percentile(run.loserLatenciesMs, 99));
    add('statements/tick', '', (run) => run.statements / run.ticks);
    add('ticks without exactly one winner', '', (run) => run.ticksWithoutOneWinner);
  }
};

/** numerator ÷ denominator of ticks/s, repetition by repetition. */
export const addTickRatio = (sheet: FigureSheet, caseName: string, results: TickResults, numerator: LeaseVariant, denominator: LeaseVariant) =>
  sheet.addPairedRatio(caseName, results, numerator, denominator, 'ticks/s ratio', ticksPerSecond);
