import { percentile } from './statistics';

/** One run a peer's handler started: which job, and when (epoch ms, this machine's clock). */
export interface ObservedRun {
  job: string;
  startedAt: number;
}

/** The occurrences a case expects: every job at every instant (epoch ms), each exactly once. */
export interface ExpectedOccurrences {
  jobs: readonly string[];
  instants: readonly number[];
}

/**
 * How far from its instant a run still counts as that occurrence's: from `beforeMs` before it
 * (a scheduler may start a hair early on a clock that runs ahead) to `afterMs` after it.
 */
export interface AttributionWindow {
  beforeMs: number;
  afterMs: number;
}

export interface RunTally {
  expected: number;
  /** Occurrences that ran at least once. */
  ran: number;
  /** Runs beyond the first of their occurrence (an occurrence run three times adds 2). */
  doubles: number;
  /** Occurrences that did not run within the window. */
  misses: number;
  /** Runs that belong to no expected occurrence (unknown job, or outside every window). */
  strays: number;
  /** Start delay (start − instant) of each occurrence's first run, ms, in no particular order. */
  startDelaysMs: number[];
}

/**
 * Attributes each run to the occurrence (job, instant) whose window holds its start, and counts
 * doubles, misses and strays. Windows of one job must not overlap (instants further apart than
 * the window): a run inside two would otherwise count twice, so that is refused.
 */
export const tallyRuns = (expected: ExpectedOccurrences, runs: readonly ObservedRun[], window: AttributionWindow): RunTally => {
  const instants = [...expected.instants].sort((a, b) => a - b);
  for (let index = 1; index < instants.length; index++) {
    if (instants[index] - instants[index - 1] < window.beforeMs + window.afterMs) {
      throw new RangeError('tallyRuns: the attribution windows of two instants overlap');
    }
  }
  const jobs = new Set(expected.jobs);
  const firstStarts = new Map<string, number>();
  const counts = new Map<string, number>();
  let strays = 0;
  for (const run of runs) {
    const instant = jobs.has(run.job)
      ? instants.find((candidate) => run.startedAt >= candidate - window.beforeMs && run.startedAt < candidate + window.afterMs)
      : undefined;
    if (instant === undefined) {
      strays++;
      continue;
    }
    const key = `${run.job}\u0000${instant}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    const first = firstStarts.get(key);
    if (first === undefined || run.startedAt < first) firstStarts.set(key, run.startedAt);
  }
  const startDelaysMs: number[] = [];
  for (const [key, startedAt] of firstStarts) startDelaysMs.push(startedAt - Number(key.slice(key.indexOf('\u0000') + 1)));
  const total = jobs.size * instants.length;
  let doubles = 0;
  for (const count of counts.values()) doubles += count - 1;
  return { expected: total, ran: counts.size, doubles, misses: total - counts.size, strays, startDelaysMs };
};

/** Exactly once: every expected occurrence ran, none twice, and nothing ran that was not due. */
export const ranExactlyOnce = (tally: RunTally): boolean => tally.doubles === 0 && tally.misses === 0 && tally.strays === 0;

/** p50 and p99 (nearest rank) of the start delays; NaN when nothing ran. */
export const startDelayPercentiles = (tally: RunTally): { p50: number; p99: number } => ({
  p50: percentile(tally.startDelaysMs, 50),
  p99: percentile(tally.startDelaysMs, 99),
});
