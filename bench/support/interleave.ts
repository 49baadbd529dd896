/** The variants in the order of one round: rotated by one each time, so none is always first. */
export const rotation = <T>(variants: readonly T[], round: number): T[] => {
  const offset = round % Math.max(1, variants.length);
  return [...variants.slice(offset), ...variants.slice(0, offset)];
};

export interface InterleaveSizes {
  repetitions: number;
  /**
   * Each repetition is measured in this many slices, and every slice visits every variant
   * (A B C, B C A, ...): a slow moment of this shared machine then falls on all variants alike
   * and a ratio of two variants in one repetition compares like with like. Default 1.
   */
  slices?: number;
}

/**
 * Measures every variant in every slice of every repetition, interleaved, and merges each
 * variant's slices into one result per repetition. Results are per variant in repetition order,
 * so index i of two variants were measured side by side and can be paired.
 */
export const interleave = async <V, R>(
  variants: readonly V[],
  sizes: InterleaveSizes,
  measure: (variant: V, repetition: number) => Promise<R>,
  merge: (slices: R[]) => R = (slices) => slices[0],
): Promise<Map<V, R[]>> => {
  const slices = Math.max(1, sizes.slices ?? 1);
  const results = new Map<V, R[]>(variants.map((variant) => [variant, []]));
  for (let repetition = 0; repetition < sizes.repetitions; repetition++) {
    const parts = new Map<V, R[]>(variants.map((variant) => [variant, []]));
    for (let slice = 0; slice < slices; slice++) {
      for (const variant of rotation(variants, repetition * slices + slice)) {
        parts.get(variant)?.push(await measure(variant, repetition));
      }
    }
    for (const variant of variants) results.get(variant)?.push(merge(parts.get(variant) ?? []));
  }
  return results;
};
