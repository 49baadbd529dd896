import { acquiresBetween, type ChurnLoad } from './churn-load';
import { sleep } from './deferred';
import { interleave } from './interleave';
import type { PruneBatch, RetentionPruner } from './retention-pruner';
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
  /** Rows deleted per second spent inside prune statements: how fast retention can go. */
  pruneCapacity: number;
  longestBatchMs: number;
  /** Rows in the table at the window's end (count(*)). */
  rows: number;
  /** Rows at the window's end finished longer ago than the horizon plus two passes. */
  overdueRows: number;
}

const batchesBetween = (batches: readonly PruneBatch[], from: number, to: number): PruneBatch[] =>
  batches.filter((batch) => batch.startedAt >= from && batch.startedAt < to);

export interface KeepUpContext {
  pruner: RetentionPruner;
  table: TableProbe;
  /** Older than this, a finished row should be gone: the horizon plus two passes. */
  overdueAfterMs: number;
}

/** `count` consecutive windows of `windowMs`, retention on throughout. */
export const measureKeepUp = async (context: KeepUpContext, count: number, windowMs: number): Promise<KeepUpWindow[]> => {
  const windows: KeepUpWindow[] = [];
  for (let index = 0; index < count; index++) {
    const from = performance.now();
    await sleep(windowMs);
    const to = performance.now();
    const seconds = (to - from) / 1000;
    const batches = batchesBetween(context.pruner.batches, from, to);
    const deleted = batches.reduce((sum, batch) => sum + batch.deleted, 0);
    const pruningMs = batches.reduce((sum, batch) => sum + batch.ms, 0);
    const { rows, overdue } = await context.table.count(context.overdueAfterMs);
    windows.push({
      from,
      to,
      deletionsPerSecond: deleted / seconds,
      pruneCapacity: pruningMs > 0 ? deleted / (pruningMs / 1000) : Number.NaN,
      longestBatchMs: Math.max(0, ...batches.map((batch) => batch.ms)),
      rows,
      overdueRows: overdue,
    });
  }
  return windows;
};

/**
 * Waits until a retention pass comes back short (nothing past the horizon left), at most
 * `timeoutMs`; returns the ms waited. A seeded history starts with a backlog: its ages were set
 * relative to the start of the seeding transaction.
 */
export const waitUntilCaughtUp = async (pruner: RetentionPruner, batchSize: number, timeoutMs: number): Promise<number> => {
  const from = performance.now();
  const seen = pruner.batches.length;
  while (performance.now() - from < timeoutMs) {
    const last = pruner.batches.length > seen ? pruner.batches[pruner.batches.length - 1] : undefined;
    if (last && last.deleted < batchSize) break;
    await sleep(100);
  }
  return performance.now() - from;
};

export interface PruningCondition {
  name: 'with pruning' | 'without pruning';
  pruning: boolean;
}

export const WITH_PRUNING: PruningCondition = { name: 'with pruning', pruning: true };
export const WITHOUT_PRUNING: PruningCondition = { name: 'without pruning', pruning: false };

/**
 * Slices of the same load, retention on in one and paused in the next, in rotating order
 * (`slices` of each per repetition); a slice starts once the toggle took effect (a paused
 * pruner's last batch done). Read the acquires sent in each slice once the load has stopped.
 */
export const sliceByPruning = (
  pruner: RetentionPruner,
  sizes: { repetitions: number; slices: number; sliceMs: number },
): Promise<Map<PruningCondition, Span[][]>> =>
  interleave(
    [WITH_PRUNING, WITHOUT_PRUNING],
    sizes,
    async (condition): Promise<Span[]> => {
      if (condition.pruning) pruner.resume();
      else await pruner.pause();
      const from = performance.now();
      await sleep(sizes.sliceMs);
      return [{ from, to: performance.now() }];
    },
    (parts) => parts.flat(),
  );
