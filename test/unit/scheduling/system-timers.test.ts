import { systemTimers } from '../../../src/features/scheduling/scheduler-ports';

describe('system timers', () => {
  beforeEach(() => jest.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z') }));
  afterEach(() => jest.useRealTimers());

  it('fire an instant beyond 2^31-1 ms at that instant, not early (chained timeouts)', () => {
    const fired = jest.fn();
    const at = Date.now() + 40 * 86_400_000; // 40 days: past Node's 24.8-day timer limit
    systemTimers.at(at, fired);
    jest.advanceTimersByTime(40 * 86_400_000 - 1);
    expect(fired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('notice a wall-clock jump within a minute and never fire twice', () => {
    const fired = jest.fn();
    systemTimers.at(Date.now() + 3_600_000, fired);
    jest.setSystemTime(Date.now() + 2 * 3_600_000); // the wall clock jumps forward two hours
    jest.advanceTimersByTime(60_000);
    expect(fired).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(10 * 3_600_000);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('run periodic work on the monotonic clock: a wall-clock step back does not hold the next period up', () => {
    const fired = jest.fn();
    systemTimers.atPeriod(Date.now() + 2_000, 2_000, fired);
    jest.setSystemTime(Date.now() - 25_000); // the wall clock steps back 25 s (NTP), as a change poll waits
    jest.advanceTimersByTime(2_000);
    expect(fired).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(60_000);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('never call back from inside at(), even for an instant already passed', () => {
    const fired = jest.fn();
    systemTimers.at(Date.now() - 1_000, fired);
    expect(fired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(0);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('can be cancelled', () => {
    const fired = jest.fn();
    const cancel = systemTimers.at(Date.now() + 5 * 60_000, fired);
    jest.advanceTimersByTime(2 * 60_000);
    cancel();
    jest.advanceTimersByTime(10 * 60_000);
    expect(fired).not.toHaveBeenCalled();
  });
});
