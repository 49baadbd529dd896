import { fractionOf } from '../../../src/features/scheduling/fleet/random-walk';
import { AheadClaims, MAX_CLAIM_STAGGER_MS } from '../../../src/features/scheduling/occurrence/ahead-claims';
import type { OccurrenceRunner } from '../../../src/features/scheduling/occurrence/occurrence-runner';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { seededRandom } from '../../chaos/chaos.random';

const MINUTE = 60_000;
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };
const holder = (name: string, every = '1m') => ({ job: { declaration: checkJobDeclaration(name, { every }) }, occupancy: { running: 0 } });
/** Instances claiming ahead by `aheadMs`, each drawing its stagger seed from one seeded sequence. */
const instances = (count: number, aheadMs: number, seed = 7) => {
  const random = seededRandom(seed);
  return Array.from(
    { length: count },
    () =>
      new AheadClaims(
        aheadMs,
        {} as OccurrenceRunner,
        silent,
        (work) => work,
        () => aheadMs,
        () => random.next(),
      ),
  );
};
/** How many of `values` fall in each tenth of [0, 1). */
const tenths = (values: readonly number[]): number[] => {
  const counts = new Array<number>(10).fill(0);
  for (const value of values) counts[Math.floor(value * 10)]++;
  return counts;
};

describe('the stagger of claims ahead across instances', () => {
  it('draws a fraction in [0, 1) per instance and instant: the same for the same pair, spread over instances and over instants', () => {
    const seeds = Array.from({ length: 1_000 }, (_, index) => Math.imul(index + 1, 0x9e3779b1));
    const instant = 1_767_225_600_000;
    const overInstances = seeds.map((seed) => fractionOf(seed, instant));
    const overInstants = Array.from({ length: 1_000 }, (_, index) => fractionOf(seeds[0], instant + index * MINUTE));
    for (const values of [overInstances, overInstants]) {
      expect(values.every((value) => value >= 0 && value < 1)).toBe(true);
      // 100 expected in each tenth; a tenth outside 60-140 is a fraction that does not spread.
      for (const count of tenths(values)) {
        expect(count).toBeGreaterThan(60);
        expect(count).toBeLessThan(140);
      }
    }
    expect(fractionOf(seeds[3], instant)).toBe(overInstances[3]);
  });

  it('puts 32 instances claiming one instant at different times within the time the lead has to spare, every job of an instance at one time', () => {
    // The default lead (2 s): half of it and half a second must remain, 500 ms to spare.
    const fleet = instances(32, 2_000);
    const next = 10 * MINUTE;
    const times = fleet.map((claims) => claims.claimTime(holder('reports.a'), next, 0)!);
    for (const time of times) {
      expect(time).toBeGreaterThanOrEqual(next - 2_000);
      expect(time).toBeLessThan(next - 2_000 + MAX_CLAIM_STAGGER_MS);
    }
    // Spread: at most a few of the 32 within 1 ms of another (each would race the other inside the unique index).
    const sorted = [...times].sort((a, b) => a - b);
    const close = sorted.slice(1).filter((time, index) => time - sorted[index] < 1).length;
    expect(close).toBeLessThanOrEqual(3);
    expect(sorted[sorted.length - 1] - sorted[0]).toBeGreaterThan(MAX_CLAIM_STAGGER_MS / 2);
    // Jobs due together on one instance are claimed together (one timer, a few statements).
    for (const [index, claims] of fleet.entries()) {
      expect(claims.claimTime(holder('reports.b'), next, 0)).toBe(times[index]);
      expect(claims.claimTime(holder('reports.c', '5m'), next, 0)).toBe(times[index]);
    }
    // The next instant is staggered anew: the first instance to claim one is not the first at every one.
    const firstAt = (instant: number) => {
      const at = fleet.map((claims) => claims.claimTime(holder('reports.a'), instant, 0)!);
      return at.indexOf(Math.min(...at));
    };
    expect(new Set(Array.from({ length: 10 }, (_, index) => firstAt(next + index * MINUTE))).size).toBeGreaterThan(3);
  });

  it('staggers no further than what the lead has to spare: none with a lead of 1 s, up to 500 ms with a longer one', () => {
    const next = 10 * MINUTE;
    for (const claims of instances(8, 1_000)) expect(claims.claimTime(holder('reports.a'), next, 0)).toBe(next - 1_000);
    for (const claims of instances(8, 1_800)) {
      // 1,800 ms: 900 ms and half a second must remain, 400 ms to spare.
      const time = claims.claimTime(holder('reports.a'), next, 0)!;
      expect(next - time).toBeGreaterThan(900 + 500);
      expect(next - time).toBeLessThanOrEqual(1_800);
    }
    for (const claims of instances(8, 10_000)) expect(next - claims.claimTime(holder('reports.a'), next, 0)!).toBeGreaterThan(10_000 - MAX_CLAIM_STAGGER_MS);
  });

  it('claims at once when armed within the lead (a boot, a job added), with no stagger', () => {
    const next = 10 * MINUTE;
    for (const claims of instances(8, 10_000)) expect(claims.claimTime(holder('reports.a'), next, next - 8_000)).toBe(next - 8_000);
  });
});
