import { type AcquireSample, acquiresBetween, type ChurnLoad } from './churn-load';
import { sleep } from './deferred';
import { rotation } from './interleave';
import type { PrunePass, RetentionPruner } from './retention-pruner';
import type { TableProbe } from './table-stats';

/** A stretch of time, by performance.now(). */
export interface Span {
  from: number;
  to: number;
}

/** Acquires sent in the span, per second: read once the load has stopped, so none is still on its way. */
export const arrivalsPerSecond = (load: ChurnLoad, span: Span): number =>
  acquiresBetween(load.acquires, span.from, span.to).length / ((span.to - span.from) / 1000);

/** One stretch of steady load with retention running. */
export interface KeepUpWindow extends Span {
  deletionsPerSecond: number;
  /** Rows deleted per second spent in prune passes (statements and the rests between them): how fast paced retention goes. */
  pruneCapacity: number;
  longestPassMs: number;
  /** Rows in the table at the window's end (count(*)). */
  rows: number;
  /** Rows at the window's end finished longer ago than the horizon plus two passes. */
  overdueRows: number;
}

const passesBetween = (passes: readonly PrunePass[], from: number, to: number): PrunePass[] =>
  passes.filter((pass) => pass.startedAt >= from && pass.startedAt < to);

export interface KeepUpContext {
  pruner: RetentionPruner;
  table: TableProbe;
  /** Older than this, a finished row should be gone: the horizon plus two passes. */
  overdueAfterMs: number;
}

/**
 * `count` consecutive windows of `windowMs`, retention on throughout. A pass counts in the window
 * it started in; the figures are read once the last window's pass has ended, so that a pass
 * running across a window's end is not lost (a pass is recorded when it ends).
 */
export const measureKeepUp = async (context: KeepUpContext, count: number, windowMs: number): Promise<KeepUpWindow[]> => {
  const spans: (Span & { rows: number; overdue: number })[] = [];
  for (let index = 0; index < count; index++) {
    const from = performance.now();
    await sleep(windowMs);
    const to = performance.now();
    const { rows, overdue } = await context.table.count(context.overdueAfterMs);
    spans.push({ from, to, rows, overdue });
  }
  await context.pruner.settled();
  return spans.map(({ from, to, rows, overdue }) => {
    const seconds = (to - from) / 1000;
    const passes = passesBetween(context.pruner.passes, from, to);
    const deleted = passes.reduce((sum, pass) => sum + pass.deleted, 0);
    const pruningMs = passes.reduce((sum, pass) => sum + pass.ms, 0);
    return {
      from,
      to,
      deletionsPerSecond: deleted / seconds,
      pruneCapacity: pruningMs > 0 ? deleted / (pruningMs / 1000) : Number.NaN,
      longestPassMs: Math.max(0, ...passes.map((pass) => pass.ms)),
      rows,
      overdueRows: overdue,
    };
  });
};

/**
 * Waits until a retention pass that started after this call has ended (a pass runs until nothing
 * past the horizon is left), at most `timeoutMs`; returns the ms waited. A seeded history starts
 * with a backlog: its ages were set relative to the start of the seeding transaction.
 */
export const waitUntilCaughtUp = async (pruner: RetentionPruner, timeoutMs: number): Promise<number> => {
  const from = performance.now();
  while (performance.now() - from < timeoutMs) {
    if (pruner.passes.some((pass) => pass.startedAt >= from)) break;
    await sleep(100);
  }
  return performance.now() - from;
};

export interface PruningCondition {
  name: 'with pruning' | 'without pruning' | 'with unpaced pruning';
  /** Retention runs in this condition's slices, with these prune options (undefined: prune's defaults). */
  prune: { dutyCycle?: number; batchSize?: number } | null;
}

export const WITH_PRUNING: PruningCondition = { name: 'with pruning', prune: {} };
export const WITHOUT_PRUNING: PruningCondition = { name: 'without pruning', prune: null };
/** Batches of 1,000 back to back, as prune ran before dutyCycle: what the pacing changes, measured beside it. */
export const WITH_UNPACED_PRUNING: PruningCondition = { name: 'with unpaced pruning', prune: { dutyCycle: 1, batchSize: 1_000 } };

/** The slices of `sliceByPruning`: each condition's, in the order they ran. */
export interface PruningSlices {
  spans: Map<PruningCondition, Span[]>;
  /** For each slice with pruning, the paused slice just before it (its backlog piled up then). */
  pausedBefore: Map<Span, Span>;
}

/**
 * Slices of the same load: each condition with pruning right after a paused slice, the pruning
 * conditions in rotating order (`slices` rounds per repetition: paused, A, paused, B; paused, B,
 * paused, A; ...). Every slice with pruning thus opens on the backlog of one paused slice, as a
 * periodic retention pass opens on its period's rows, whichever condition it is (in plain
 * rotation only some did). A slice starts once the toggle took effect (a paused pruner's last
 * pass done). Read the acquires sent in each slice once the load has stopped.
 */
export const sliceByPruning = async (
  pruner: RetentionPruner,
  conditions: readonly PruningCondition[],
  sizes: { repetitions: number; slices: number; sliceMs: number },
): Promise<PruningSlices> => {
  const paused = conditions.find((condition) => condition.prune === null);
  if (!paused) throw new Error('sliceByPruning: one condition must pause pruning');
  const pruning = conditions.filter((condition) => condition !== paused);
  const spans = new Map<PruningCondition, Span[]>(conditions.map((condition) => [condition, []]));
  const pausedBefore = new Map<Span, Span>();
  const slice = async (condition: PruningCondition): Promise<Span> => {
    await pruner.pause();
    if (condition.prune !== null) pruner.resume(condition.prune);
    const from = performance.now();
    await sleep(sizes.sliceMs);
    const span = { from, to: performance.now() };
    spans.get(condition)?.push(span);
    return span;
  };
  for (let round = 0; round < sizes.repetitions * sizes.slices; round++) {
    for (const condition of rotation(pruning, round)) {
      const before = await slice(paused);
      pausedBefore.set(await slice(condition), before);
    }
  }
  return { spans, pausedBefore };
};

/** Acquire latencies of some slices, split by whether a prune pass was running when each was sent. */
export interface BesidePasses {
  during: number[];
  outside: number[];
}

/**
 * The acquires sent in `spans`, split by whether a prune pass (statements and rests) was running
 * when each was sent: what a pass does to the acquires beside it, apart from what the machine
 * does to all of them (a stall of this shared machine makes a slice's p99, pass or not).
 */
export const besidePasses = (acquires: readonly AcquireSample[], spans: readonly Span[], passes: readonly PrunePass[]): BesidePasses => {
  const inPass = (at: number): boolean => passes.some((pass) => at >= pass.startedAt && at < pass.startedAt + pass.ms);
  const split: BesidePasses = { during: [], outside: [] };
  for (const sample of acquires) {
    if (!spans.some((span) => sample.sentAt >= span.from && sample.sentAt < span.to)) continue;
    (inPass(sample.sentAt) ? split.during : split.outside).push(sample.ms);
  }
  return split;
};
