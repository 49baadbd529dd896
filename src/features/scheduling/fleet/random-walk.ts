/** `items` in a random order (Fisher–Yates). */
export const shuffled = <T>(items: readonly T[], random: () => number): T[] => {
  const copy = [...items];
  for (let index = copy.length - 1; index > 0; index--) {
    const other = Math.min(index, Math.floor(random() * (index + 1)));
    [copy[index], copy[other]] = [copy[other], copy[index]];
  }
  return copy;
};

/**
 * `items` from a random offset, wrapping round: instances racing for the same runs (the jobs due
 * at one instant, the tenants of one occurrence) claim different ones first, so the work spreads.
 */
export const fromRandomOffset = <T>(items: readonly T[], random: () => number): T[] => {
  const offset = Math.min(items.length - 1, Math.floor(random() * items.length));
  return offset > 0 ? [...items.slice(offset), ...items.slice(0, offset)] : [...items];
};

/**
 * A fraction in [0, 1) of this instance's own for `instant` (`seed` drawn once per instance): the
 * same for every job due at the instant, different from one instant, and one instance, to the next.
 */
export const fractionOf = (seed: number, instant: number): number => {
  let hash = Math.imul(seed ^ (instant % 0x7fffffff), 0x9e3779b1);
  hash = Math.imul(hash ^ (hash >>> 15), 0x85ebca6b);
  return ((hash ^ (hash >>> 13)) >>> 0) / 2 ** 32;
};
