import { cronAt } from '../../bench/support/peer-schedulers';
import { ranExactlyOnce, startDelayPercentiles, tallyRuns } from '../../bench/support/peer-runs';

/** The counting behind `npm run bench -- peers`' exactly-once and latency verdicts. */
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 11, 2, 14, 0);
const T1 = T0 + MINUTE;
const run = (job: string, dueAt: number, delayMs: number) => ({ job, dueAt, startedAt: dueAt + delayMs });

describe('tallyRuns', () => {
  it('counts every occurrence run once as exactly once, with its start delay', () => {
    const tally = tallyRuns({ jobs: ['a', 'b'], instants: [T0, T1] }, [run('a', T0, 3), run('b', T0, 7), run('a', T1, 11), run('b', T1, 2)]);
    expect(tally).toMatchObject({ expected: 4, ran: 4, doubles: 0, misses: 0, strays: 0 });
    expect([...tally.startDelaysMs].sort((x, y) => x - y)).toEqual([2, 3, 7, 11]);
    expect(ranExactlyOnce(tally)).toBe(true);
  });

  it('counts a second and third run of one occurrence as two doubles, and its earliest run for the delay', () => {
    const tally = tallyRuns({ jobs: ['a'], instants: [T0] }, [run('a', T0, 40), run('a', T0, 4), run('a', T0, 900)]);
    expect(tally).toMatchObject({ expected: 1, ran: 1, doubles: 2, misses: 0, strays: 0 });
    expect(tally.startDelaysMs).toEqual([4]);
    expect(ranExactlyOnce(tally)).toBe(false);
  });

  it("charges a late run to its own occurrence, not to the next minute's", () => {
    // The previous minute's run starts 70 s late, inside the next minute: it is not a double of T1.
    const tally = tallyRuns({ jobs: ['a'], instants: [T0, T1] }, [run('a', T0, 70_000), run('a', T1, 5)]);
    expect(tally).toMatchObject({ expected: 2, ran: 2, doubles: 0, misses: 0, strays: 0 });
    expect([...tally.startDelaysMs].sort((x, y) => x - y)).toEqual([5, 70_000]);
  });

  it('counts an occurrence nobody ran as a miss, and a run of an unknown job or instant as a stray', () => {
    const tally = tallyRuns({ jobs: ['a', 'b'], instants: [T0] }, [run('a', T1, 1), run('c', T0, 1), run('b', T0, 0)]);
    expect(tally).toMatchObject({ expected: 2, ran: 1, doubles: 0, misses: 1, strays: 2 });
    expect(ranExactlyOnce(tally)).toBe(false);
  });
});

describe('startDelayPercentiles', () => {
  it('takes nearest-rank p50 and p99 of the first runs only', () => {
    const runs = Array.from({ length: 100 }, (_, index) => run(`j${index}`, T0, index + 1));
    runs.push(run('j99', T0, 50_000));
    const tally = tallyRuns({ jobs: runs.slice(0, 100).map((item) => item.job), instants: [T0] }, runs);
    expect(tally.doubles).toBe(1);
    expect(startDelayPercentiles(tally)).toEqual({ p50: 50, p99: 99 });
  });

  it('is NaN when nothing ran', () => {
    expect(startDelayPercentiles(tallyRuns({ jobs: ['a'], instants: [T0] }, []))).toEqual({ p50: Number.NaN, p99: Number.NaN });
  });
});

describe('cronAt', () => {
  it('is due at the given whole minutes (UTC) and names them field by field', () => {
    expect(cronAt([Date.UTC(2027, 0, 31, 23, 59)])).toBe('59 23 31 1 *');
    expect(cronAt([Date.UTC(2026, 11, 2, 14, 5), Date.UTC(2026, 11, 2, 14, 6)])).toBe('5,6 14 2 12 *');
  });

  it('refuses an instant that is not a whole minute', () => {
    expect(() => cronAt([Date.UTC(2026, 11, 2, 14, 5, 30)])).toThrow(RangeError);
  });
});
