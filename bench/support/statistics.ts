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
