import { ranExactlyOnce, startDelayPercentiles, tallyRuns } from '../../bench/support/peer-runs';
import { cronAt } from '../../bench/support/peer-schedulers';

/** The counting behind `npm run bench -- peers`' exactly-once and latency verdicts. */
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 11, 2, 14, 0);
const WINDOW = { beforeMs: 5_000, afterMs: 55_000 };

describe('tallyRuns', () => {
  it('counts every occurrence run once as exactly once, with its start delay', () => {
    const tally = tallyRuns(
      { jobs: ['a', 'b'], instants: [T0, T0 + MINUTE] },
      [
        { job: 'a', startedAt: T0 + 3 },
        { job: 'b', startedAt: T0 + 7 },
        { job: 'a', startedAt: T0 + MINUTE + 11 },
        { job: 'b', startedAt: T0 + MINUTE + 2 },
      ],
      WINDOW,
    );
    expect(tally).toMatchObject({ expected: 4, ran: 4, doubles: 0, misses: 0, strays: 0 });
    expect([...tally.startDelaysMs].sort((x, y) => x - y)).toEqual([2, 3, 7, 11]);
    expect(ranExactlyOnce(tally)).toBe(true);
  });

  it('counts a second and third run of one occurrence as two doubles, and its first run for the delay', () => {
    const tally = tallyRuns(
      { jobs: ['a'], instants: [T0] },
      [
        { job: 'a', startedAt: T0 + 40 },
        { job: 'a', startedAt: T0 + 4 },
        { job: 'a', startedAt: T0 + 900 },
      ],
      WINDOW,
    );
    expect(tally).toMatchObject({ expected: 1, ran: 1, doubles: 2, misses: 0, strays: 0 });
    expect(tally.startDelaysMs).toEqual([4]);
    expect(ranExactlyOnce(tally)).toBe(false);
  });

  it('counts an occurrence nobody ran as a miss, and a run outside every window or of an unknown job as a stray', () => {
    const tally = tallyRuns(
      { jobs: ['a', 'b'], instants: [T0] },
      [
        { job: 'a', startedAt: T0 - 5_001 },
        { job: 'a', startedAt: T0 + 55_000 },
        { job: 'c', startedAt: T0 + 1 },
        { job: 'b', startedAt: T0 - 5_000 },
      ],
      WINDOW,
    );
    expect(tally).toMatchObject({ expected: 2, ran: 1, doubles: 0, misses: 1, strays: 3 });
    expect(tally.startDelaysMs).toEqual([-5_000]);
    expect(ranExactlyOnce(tally)).toBe(false);
  });

  it('refuses instants whose windows overlap', () => {
    expect(() => tallyRuns({ jobs: ['a'], instants: [T0, T0 + 30_000] }, [], WINDOW)).toThrow(RangeError);
  });
});

describe('startDelayPercentiles', () => {
  it('takes nearest-rank p50 and p99 of the first runs only', () => {
    const runs = Array.from({ length: 100 }, (_, index) => ({ job: `j${index}`, startedAt: T0 + index + 1 }));
    runs.push({ job: 'j99', startedAt: T0 + 50_000 });
    const tally = tallyRuns({ jobs: runs.slice(0, 100).map((run) => run.job), instants: [T0] }, runs, WINDOW);
    expect(tally.doubles).toBe(1);
    expect(startDelayPercentiles(tally)).toEqual({ p50: 50, p99: 99 });
  });

  it('is NaN when nothing ran', () => {
    const tally = tallyRuns({ jobs: ['a'], instants: [T0] }, [], WINDOW);
    expect(startDelayPercentiles(tally)).toEqual({ p50: Number.NaN, p99: Number.NaN });
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
