/** Order statistics for latency samples and for the figures of repeated runs. */

export interface Spread {
  min: number;
  median: number;
  max: number;
  /** Every repetition's value, in the order they were measured. */
  samples: number[];
}

const ascending = (values: readonly number[]): number[] => [...values].sort((a, b) => a - b);

/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN when there are none. */
export const percentile = (values: readonly number[], p: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = ascending(values);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
};

export const median = (values: readonly number[]): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = ascending(values);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

export const spread = (samples: readonly number[]): Spread => {
  const sorted = ascending(samples);
  return { min: sorted[0] ?? Number.NaN, median: median(sorted), max: sorted[sorted.length - 1] ?? Number.NaN, samples: [...samples] };
};

/** Ratios of paired repetitions (measured side by side), as a spread. */
export const pairedRatios = (numerators: readonly number[], denominators: readonly number[]): Spread =>
  spread(numerators.map((value, index) => value / denominators[index]));

/**
 * A 95% interval of median(numerators) ÷ median(denominators) by the bootstrap: each group
 * resampled with replacement `resamples` times (a fixed seed, so that a run reports the same
 * interval for the same figures). Shows whether a ratio of medians from this many samples can
 * tell a goal like 1.1 from 1.0 at all.
 */
export const ratioOfMediansInterval = (numerators: readonly number[], denominators: readonly number[], resamples = 2_000): { low: number; high: number } => {
  if (numerators.length === 0 || denominators.length === 0) return { low: Number.NaN, high: Number.NaN };
  let state = 0x2545f491;
  const random = (): number => {
    // xorshift32: reproducible, and plenty for resampling indexes
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const resample = (values: readonly number[]): number[] => values.map(() => values[Math.floor(random() * values.length)]);
  const ratios: number[] = [];
  for (let index = 0; index < resamples; index++) ratios.push(median(resample(numerators)) / median(resample(denominators)));
  return { low: percentile(ratios, 2.5), high: percentile(ratios, 97.5) };
};
