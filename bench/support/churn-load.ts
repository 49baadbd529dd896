import type { JobSchedulerService } from '../../src/features';
import { sleep } from './deferred';
import { BENCH_LEASE_MS } from './lease-node';

/** Job codes the runs spread over, as a scheduler with many jobs writes them. */
const CODES = 50;
/** How often the generator starts the runs that are due. */
const TICK_MS = 5;
let tickSequence = 0;

/** A scheduler occurrence key (ISO 8601, one a second from 2030), unique in this process. */
const nextRunKey = (): string => new Date(Date.UTC(2030, 0, 1) + tickSequence++ * 1_000).toISOString();

export interface ChurnLoadOptions {
  /** Runs started per second (an open loop: a slow database does not slow the arrivals). */
  ratePerSecond: number;
  /** From acquire to complete; the heartbeat is sent halfway. */
  holdMs: number;
  /** Runs in flight beyond which the generator stops starting more (it fell behind). */
  maxInFlight: number;
  /** Stop starting runs after this many; default: until stopped. */
  runs?: number;
}

/** One acquire: when it was sent (performance.now()) and how long it took. */
export interface AcquireSample {
  sentAt: number;
  ms: number;
}

export interface ChurnLoad {
  /** Every acquire so far, in the order they returned. */
  readonly acquires: readonly AcquireSample[];
  /** Runs not started because `maxInFlight` runs were still going. */
  skipped(): number;
  /** Runs started so far. */
  started(): number;
  /** Resolves once the generator stops: `runs` runs started (or skipped), a run failed, or stop(). */
  readonly allStarted: Promise<void>;
  /** Stops starting runs, waits for those in flight; throws the first cycle that went wrong. */
  stop(): Promise<void>;
}

/** acquire → heartbeat → complete of one fresh occurrence; every step must apply. */
export const runFullCycle = async (jobs: JobSchedulerService, holdMs: number, sample: (sentAt: number, ms: number) => void): Promise<void> => {
  const code = `churn-${tickSequence % CODES}`;
  const runKey = nextRunKey();
  const sentAt = performance.now();
  const lock = await jobs.acquire({ code, runKey, leaseMs: BENCH_LEASE_MS, heartbeatMs: 0 });
  sample(sentAt, performance.now() - sentAt);
  if (!lock.acquired) throw new Error(`churn: ${code} ${runKey} was not acquired`);
  await sleep(holdMs / 2);
  if (!(await jobs.heartbeat(lock))) throw new Error(`churn: heartbeat of ${code} ${runKey} did not apply`);
  await sleep(holdMs / 2);
  if (!(await jobs.complete(lock))) throw new Error(`churn: complete of ${code} ${runKey} did not apply`);
};

/**
 * Starts full lease cycles at `ratePerSecond`, spread over `nodes` in turn, until stopped. The
 * arrivals follow the clock (runs due since the start), so a stall is caught up, not forgotten.
 */
export const startChurnLoad = (nodes: readonly JobSchedulerService[], options: ChurnLoadOptions): ChurnLoad => {
  const acquires: AcquireSample[] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  let skipped = 0;
  let started = 0;
  let stopping = false;
  const begun = performance.now();

  const startOne = (): void => {
    const run = runFullCycle(nodes[started % nodes.length], options.holdMs, (sentAt, ms) => acquires.push({ sentAt, ms })).catch((error: unknown) => {
      failure ??= error;
    });
    inFlight.add(run);
    void run.finally(() => inFlight.delete(run));
  };

  const generator = (async () => {
    const limit = options.runs ?? Number.POSITIVE_INFINITY;
    while (!stopping && failure === undefined && started + skipped < limit) {
      const due = Math.min(limit, Math.floor(((performance.now() - begun) / 1000) * options.ratePerSecond));
      for (; started + skipped < due;) {
        if (inFlight.size >= options.maxInFlight) skipped++;
        else {
          startOne();
          started++;
        }
      }
      await sleep(TICK_MS);
    }
  })();

  return {
    acquires,
    skipped: () => skipped,
    started: () => started,
    allStarted: generator,
    stop: async () => {
      stopping = true;
      await generator;
      await Promise.all([...inFlight]);
      if (failure !== undefined) throw failure instanceof Error ? failure : new Error(String(failure));
    },
  };
};

/** The acquires sent in [from, to). */
export const acquiresBetween = (samples: readonly AcquireSample[], from: number, to: number): number[] =>
  samples.filter((sample) => sample.sentAt >= from && sample.sentAt < to).map((sample) => sample.ms);
