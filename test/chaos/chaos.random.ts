import { createHash, randomInt } from 'node:crypto';

/** A seeded pseudo-random sequence (mulberry32): the same seed gives the same choices. */
export interface SeededRandom {
  /** A number in [0, 1). */
  next(): number;
  /** An integer in [min, max]. */
  int(min: number, max: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
}

export const seededRandom = (seed: number): SeededRandom => {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[Math.floor(next() * items.length)];
    },
  };
};

/**
 * A number in [0, 1) fixed by its parts, whatever the order of calls: a run's work length does
 * not depend on which worker happens to win it.
 */
export const unitOf = (...parts: Array<string | number>): number => createHash('sha256').update(parts.join('\u001f')).digest().readUInt32BE(0) / 4_294_967_296;

/** A fresh seed for a run that names none; printed so that the run can be replayed. */
export const freshSeed = (): number => randomInt(1, 2 ** 31 - 1);
