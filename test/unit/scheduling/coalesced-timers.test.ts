import { coalescedTimers } from '../../../src/features/scheduling/timers/coalesced-timers';
import { FixedClock, ManualTimers } from '../../../src/features/testing';

describe('coalescedTimers', () => {
  it('arms one underlying timer per instant and calls each in the order armed', async () => {
    const timers = new ManualTimers(new FixedClock(0));
    const armed: number[] = [];
    const underlying = { now: () => timers.now(), at: (instant: number, fn: () => void) => (armed.push(instant), timers.at(instant, fn)) };
    const at = coalescedTimers(underlying);
    const calls: string[] = [];
    for (const name of ['a', 'b', 'c']) at(1_000, () => calls.push(name));
    at(2_000, () => calls.push('later'));
    expect(armed).toEqual([1_000, 2_000]);
    await timers.advance(1_000 - timers.now());
    expect(calls).toEqual(['a', 'b', 'c']);
    // A fired instant takes new calls on a fresh timer.
    at(1_500, () => calls.push('new'));
    await timers.advance(2_000 - timers.now());
    expect(calls).toEqual(['a', 'b', 'c', 'new', 'later']);
  });

  it('cancels one call, and the timer with the last one; a throwing call does not stop the others', async () => {
    const timers = new ManualTimers(new FixedClock(0));
    const at = coalescedTimers(timers);
    const calls: string[] = [];
    const cancelA = at(1_000, () => calls.push('a'));
    at(1_000, () => {
      throw new Error('boom');
    });
    at(1_000, () => calls.push('c'));
    cancelA();
    const cancelOnly = at(3_000, () => calls.push('never'));
    cancelOnly();
    await expect(timers.advance(1_000)).rejects.toThrow('boom');
    expect(calls).toEqual(['c']);
    await timers.advance(5_000 - timers.now());
    expect(calls).toEqual(['c']);
  });
});
