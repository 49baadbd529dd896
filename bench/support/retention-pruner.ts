import type { JobSchedulerService } from '../../src/features';
import { deferred, type Deferred, sleep } from './deferred';

export interface PrunerOptions {
  /** Finished runs older than this are deleted (`prune({ olderThan })`). */
  horizonMs: number;
  /** Rows per statement (`prune({ batchSize })`); undefined: the library's default. */
  batchSize?: number;
  /** The share of a pass spent in statements (`prune({ dutyCycle })`); undefined: the library's default. */
  dutyCycle?: number;
  /** The pause between two passes (retention's `every`, scaled down). */
  everyMs: number;
}

/** One pass (one `prune` call): when it started (performance.now()), how long it took, rows deleted. */
export interface PrunePass {
  startedAt: number;
  /** Statements and the rests between them. */
  ms: number;
  deleted: number;
}

export interface RetentionPruner {
  readonly passes: readonly PrunePass[];
  /** Stops after the pass in progress; resolves once no statement is running. */
  pause(): Promise<void>;
  /** Resolves once the pass in progress, if any, has ended (and is in `passes`); the loop goes on. */
  settled(): Promise<void>;
  /** Runs passes again, with these prune options from now on (default: those it started with). */
  resume(prune?: Pick<PrunerOptions, 'dutyCycle' | 'batchSize'>): void;
  /** Ends the loop; throws what a prune threw. */
  stop(): Promise<void>;
}

/**
 * Retention as JobRetention runs it, on a short horizon: each pass is one `prune` call, which
 * deletes batch after batch (paced by its dutyCycle) until one comes back short, then the pruner
 * waits `everyMs`.
 */
export const startRetentionPruner = (jobs: JobSchedulerService, options: PrunerOptions): RetentionPruner => {
  const passes: PrunePass[] = [];
  let running = true;
  let busy = false;
  let paused: Deferred | undefined;
  let failure: unknown;
  /** Waiting for the pass in progress to end (pause, settled). */
  const passWaiters: (() => void)[] = [];
  let dutyCycle = options.dutyCycle;
  let batchSize = options.batchSize;

  const pass = async (): Promise<void> => {
    busy = true;
    try {
      const startedAt = performance.now();
      const deleted = await jobs.prune({ olderThan: options.horizonMs, batchSize, dutyCycle });
      passes.push({ startedAt, ms: performance.now() - startedAt, deleted });
    } finally {
      busy = false;
      for (const resolve of passWaiters.splice(0)) resolve();
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

  const passEnded = (): Promise<void> => (busy ? new Promise<void>((resolve) => passWaiters.push(resolve)) : Promise.resolve());

  return {
    passes,
    settled: passEnded,
    pause: () => {
      paused ??= deferred();
      return passEnded();
    },
    resume: (prune) => {
      dutyCycle = prune?.dutyCycle ?? options.dutyCycle;
      batchSize = prune?.batchSize ?? options.batchSize;
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
