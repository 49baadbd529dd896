import { ratioOfMediansInterval } from '../../bench/support/statistics';

describe('the bootstrap interval of a ratio of medians', () => {
  it('is the ratio itself when every sample is the same', () => {
    expect(ratioOfMediansInterval([2, 2, 2, 2], [1, 1, 1, 1])).toEqual({ low: 2, high: 2 });
  });

  it('is narrow for tight samples and wide for scattered ones, around the ratio of the medians', () => {
    const tight = ratioOfMediansInterval([5.0, 5.1, 5.2, 5.1, 5.0, 5.2, 5.1, 5.0], [4.0, 4.1, 4.0, 4.2, 4.1, 4.0, 4.1, 4.2]);
    expect(tight.low).toBeGreaterThan(1.15);
    expect(tight.high).toBeLessThan(1.35);
    const scattered = ratioOfMediansInterval([5, 19, 7, 40, 6, 300, 8, 12], [4, 22, 5, 35, 9, 250, 6, 15]);
    expect(scattered.low).toBeLessThan(1);
    expect(scattered.high).toBeGreaterThan(1.1);
  });

  it('is the same interval for the same samples (a fixed seed)', () => {
    const samples = [3, 9, 4, 12, 5, 7];
    expect(ratioOfMediansInterval(samples, [4, 5, 6, 8, 3, 10])).toEqual(ratioOfMediansInterval(samples, [4, 5, 6, 8, 3, 10]));
  });

  it('is NaN without samples', () => {
    expect(ratioOfMediansInterval([], [1])).toEqual({ low: Number.NaN, high: Number.NaN });
  });
});
