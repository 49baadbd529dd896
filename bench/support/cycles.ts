import { type ClosedLoopResult, mergeClosedLoops, perSecond, runClosedLoop } from './closed-loop';
import { interleave } from './interleave';
import type { LeaseNode, LeaseVariant } from './lease-node';
import type { FigureSheet } from './report';
import { freshRunKey } from './run-keys';
import { percentile } from './statistics';

const CODE = 'cycles';

/** One uncontended cycle: acquire a fresh run, then complete it. Two statements. */
const cycle = (node: LeaseNode, prefix: string) => async (): Promise<void> => {
  const run = await node.acquire(CODE, freshRunKey(prefix));
  if (!run) throw new Error(`${prefix}: a fresh run was not acquired`);
  if (!(await run.complete())) throw new Error(`${prefix}: complete did not apply`);
};

export interface CycleSizes {
  callers: number;
  repetitions: number;
  /** Slices per repetition (each variant runs once per slice), and how long each lasts. */
  slices: number;
  sliceMs: number;
}

export type CycleResults = Map<LeaseVariant, ClosedLoopResult[]>;

/** Runs each variant's node unmeasured for a while: connections open, statements prepared, JIT warm. */
export const warmUp = async (nodes: ReadonlyMap<LeaseVariant, LeaseNode>, callers: number, durationMs: number): Promise<void> => {
  for (const [variant, node] of nodes) await runClosedLoop(callers, durationMs, cycle(node, `${variant.name}-warm`));
};

/** Cycles of every variant, interleaved slice by slice, `sizes.callers` concurrent callers each. */
export const measureCycles = (nodes: ReadonlyMap<LeaseVariant, LeaseNode>, sizes: CycleSizes): Promise<CycleResults> =>
  interleave(
    [...nodes.keys()],
    sizes,
    (variant) => {
      const node = nodes.get(variant);
      if (!node) throw new Error(`no node for ${variant.name}`);
      return runClosedLoop(sizes.callers, sizes.sliceMs, cycle(node, variant.name));
    },
    mergeClosedLoops,
  );

/** cycles/s, p50 and p99 of a cycle, and the Node CPU a cycle costs, for every variant. */
export const addCycleFigures = (sheet: FigureSheet, caseName: string, results: CycleResults): void => {
  for (const [variant, runs] of results) {
    sheet.add(caseName, variant.name, 'cycles/s', '', runs.map(perSecond));
    sheet.add(
      caseName,
      variant.name,
      'p50 cycle',
      'ms',
      runs.map((run) => percentile(run.latenciesMs, 50)),
    );
    sheet.add(
      caseName,
      variant.name,
      'p99 cycle',
      'ms',
      runs.map((run) => percentile(run.latenciesMs, 99)),
    );
    sheet.add(
      caseName,
      variant.name,
      'Node CPU per cycle',
      'µs',
      runs.map((run) => run.cpuMicros / run.operations),
    );
  }
};

/** numerator ÷ denominator of cycles/s, repetition by repetition. */
export const addCycleRatio = (sheet: FigureSheet, caseName: string, results: CycleResults, numerator: LeaseVariant, denominator: LeaseVariant) =>
  sheet.addPairedRatio(caseName, results, numerator, denominator, 'cycles/s ratio', perSecond);

export const callersLabel = (callers: number): string => `${callers} caller${callers === 1 ? '' : 's'}`;
