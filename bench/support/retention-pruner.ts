import type { JobSchedulerService } from '../../src/features';
import { deferred, type Deferred, sleep } from './deferred';

export interface PrunerOptions {
  /** Finished runs older than this are deleted (`prune({ olderThan })`). */
  horizonMs: number;
  /** Rows per statement (`prune({ batchSize })`). */
  batchSize: number;
  /** The pause between two passes (retention's `every`, scaled down). */
  everyMs: number;
}

/** One prune statement: when it started (performance.now()), how long it took, rows deleted. */
export interface PruneBatch {
  startedAt: number;
  ms: number;
  deleted: number;
}

export interface RetentionPruner {
  readonly batches: readonly PruneBatch[];
  /** Stops after the batch in progress; resolves once no statement is running. */
  pause(): Promise<void>;
  resume(): void;
  /** Ends the loop; throws what a prune threw. */
  stop(): Promise<void>;
}

/**
 * Retention as JobRetention runs it, on a short horizon: each pass deletes batch after batch
 * until one comes back short, then waits `everyMs`. Each batch is one `prune` call limited to
 * `batchSize` rows, so that every statement is timed on its own (prune itself loops the same way).
 */
export const startRetentionPruner = (jobs: JobSchedulerService, options: PrunerOptions): RetentionPruner => {
  const batches: PruneBatch[] = [];
  let running = true;
  let busy = false;
  let paused: Deferred | undefined;
  let idle: Deferred | undefined;
  let failure: unknown;

  const pass = async (): Promise<void> => {
    busy = true;
    try {
      while (!paused && running) {
        const startedAt = performance.now();
        const deleted = await jobs.prune({ olderThan: options.horizonMs, batchSize: options.batchSize, limit: options.batchSize });
        batches.push({ startedAt, ms: performance.now() - startedAt, deleted });
        if (deleted < options.batchSize) return;
      }
    } finally {
      busy = false;
      idle?.resolve();
    }
  };

  const loop = (async () => {
    try {
      while (running) {
        if (paused) await paused.promise;
        else {
          await pass();
          if (!paused && running) await sleep(options.everyMs);
        }
      }
    } catch (error) {
      failure = error;
    }
  })();

  return {
    batches,
    pause: async () => {
      paused ??= deferred();
      idle = deferred();
      if (!busy) idle.resolve();
      await idle.promise;
    },
    resume: () => {
      const wake = paused;
      paused = undefined;
      wake?.resolve();
    },
    stop: async () => {
      running = false;
      paused?.resolve();
      await loop;
      if (failure !== undefined) throw failure instanceof Error ? failure : new Error(String(failure));
    },
  };
};
