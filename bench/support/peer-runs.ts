import { percentile } from './statistics';

/** One run a peer's handler started: which job, the due instant of the occurrence it ran (as the peer tells it), and when it started (epoch ms). */
export interface ObservedRun {
  job: string;
  dueAt: number;
  startedAt: number;
}

/** The occurrences a case expects: every job at every instant (epoch ms), each exactly once. */
export interface ExpectedOccurrences {
  jobs: readonly string[];
  instants: readonly number[];
}

export interface RunTally {
  expected: number;
  /** Occurrences that ran at least once. */
  ran: number;
  /** Runs beyond the first of their occurrence (an occurrence run three times adds 2). */
  doubles: number;
  /** Occurrences that did not run (among the runs reported). */
  misses: number;
  /** Runs that belong to no expected occurrence (an unknown job, or an instant not expected). */
  strays: number;
  /** Start delay (start − due instant) of each occurrence's first run, ms, in no particular order. */
  startDelaysMs: number[];
}

/**
 * Charges each run to the occurrence (job, due instant) it names, and counts doubles, misses and
 * strays. A run is charged by the instant the peer says it ran for, not by when it started: a run
 * of the previous minute that starts late is that minute's, not a double of the next one.
 */
export const tallyRuns = (expected: ExpectedOccurrences, runs: readonly ObservedRun[]): RunTally => {
  const instants = new Set(expected.instants);
  const jobs = new Set(expected.jobs);
  const firstStarts = new Map<string, number>();
  const counts = new Map<string, number>();
  let strays = 0;
  for (const run of runs) {
    if (!jobs.has(run.job) || !instants.has(run.dueAt)) {
      strays++;
      continue;
    }
    const key = `${run.job}\u0000${run.dueAt}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    const first = firstStarts.get(key);
    if (first === undefined || run.startedAt - run.dueAt < first) firstStarts.set(key, run.startedAt - run.dueAt);
  }
  const total = jobs.size * instants.size;
  let doubles = 0;
  for (const count of counts.values()) doubles += count - 1;
  return { expected: total, ran: counts.size, doubles, misses: total - counts.size, strays, startDelaysMs: [...firstStarts.values()] };
};

/** Exactly once: every expected occurrence ran, none twice, and nothing ran that was not due. */
export const ranExactlyOnce = (tally: RunTally): boolean => tally.doubles === 0 && tally.misses === 0 && tally.strays === 0;

/** p50 and p99 (nearest rank) of the start delays; NaN when nothing ran. */
export const startDelayPercentiles = (tally: RunTally): { p50: number; p99: number } => ({
  p50: percentile(tally.startDelaysMs, 50),
  p99: percentile(tally.startDelaysMs, 99),
});
