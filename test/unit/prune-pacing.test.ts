import { DEFAULT_PRUNE_DUTY_CYCLE, pruneRestMs } from '../../src/features/job-scheduler/operations/prune-pacing';

describe('prune pacing', () => {
  it('rests in proportion to the batch, so that statements take the duty cycle of the pass', () => {
    expect(pruneRestMs(20, 0.5)).toBe(20);
    expect(pruneRestMs(20, 0.25)).toBe(60);
    expect(pruneRestMs(10, 0.1)).toBeCloseTo(90);
    // statements ÷ (statements + rests) is the duty cycle, whatever the batch took
    for (const batchMs of [0.5, 7, 300]) expect(batchMs / (batchMs + pruneRestMs(batchMs, 0.2))).toBeCloseTo(0.2);
  });

  it('backs off as batches slow down: a batch twice as long is followed by a rest twice as long', () => {
    expect(pruneRestMs(80, DEFAULT_PRUNE_DUTY_CYCLE)).toBe(2 * pruneRestMs(40, DEFAULT_PRUNE_DUTY_CYCLE));
  });

  it('does not rest at a duty cycle of 1, nor after a batch that took no time', () => {
    expect(pruneRestMs(50, 1)).toBe(0);
    expect(pruneRestMs(0, 0.5)).toBe(0);
    expect(pruneRestMs(-1, 0.5)).toBe(0);
  });
});
