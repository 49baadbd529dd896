import { FixedClock, ManualJobScheduler } from '../../../src/features/testing';

/**
 * A job that keeps failing logs its first failure whole (with its stack), then at most one
 * summary per interval, and its recovery; another error starts a streak of its own.
 */
interface Line {
  level: 'log' | 'warn' | 'error';
  message: string;
  stack?: string;
}

const setup = () => {
  const lines: Line[] = [];
  const logger = {
    log: (message: string) => void lines.push({ level: 'log', message }),
    warn: (message: string) => void lines.push({ level: 'warn', message }),
    error: (message: string, stack?: string) => void lines.push({ level: 'error', message, stack }),
  };
  const scheduler = new ManualJobScheduler({ clock: new FixedClock(Date.UTC(2026, 0, 1)), logger, failureLogIntervalMs: 60_000 });
  let failure: Error | null = new Error('ERP down');
  scheduler.register({
    name: 'orders.sync',
    every: '1s',
    run: async () => {
      if (failure) throw failure;
    },
  });
  const errors = () => lines.filter((line) => line.level === 'error');
  return { scheduler, lines, errors, fail: (error: Error | null) => (failure = error) };
};

describe('failure logs', () => {
  it('log the first failure whole, then summarize repeats at most once per interval', async () => {
    const { scheduler, errors } = setup();
    await scheduler.start();
    await scheduler.advance(30_000); // 30 failures
    expect(errors()).toHaveLength(1);
    expect(errors()[0].message).toMatch(/orders\.sync @ .* failed \(JOB_FAILED\): Error: ERP down/);
    expect(errors()[0].stack).toContain('ERP down');
    await scheduler.advance(31_000); // past the interval: one summary
    expect(errors()).toHaveLength(2);
    expect(errors()[1].message).toMatch(/orders\.sync failed 60 more time\(s\) with the same error in the last 60 s \(last: .*ERP down\)/);
    expect(errors()[1].stack).toBeUndefined();
    await scheduler.advance(120_000);
    expect(errors()).toHaveLength(4); // one summary a minute
    expect(scheduler.runs.filter((run) => run.outcome === 'failed').length).toBeGreaterThanOrEqual(180); // every run still counted
    await scheduler.stop();
  });

  it('log a different error whole, and the recovery with the repeats not yet told', async () => {
    const { scheduler, errors, lines, fail } = setup();
    await scheduler.start();
    await scheduler.advance(5_000);
    fail(new Error('disk full'));
    await scheduler.advance(3_000);
    const told = errors().map((line) => line.message);
    expect(told).toHaveLength(3);
    expect(told[1]).toMatch(/failed 4 more time\(s\) .*ERP down/);
    expect(told[2]).toMatch(/Error: disk full/);
    fail(null);
    await scheduler.advance(1_000);
    expect(errors().at(-1)?.message).toMatch(/failed 2 more time\(s\) .*disk full/);
    expect(lines.at(-1)).toEqual({ level: 'log', message: 'orders.sync recovered after 8 failed run(s)' });
    await scheduler.advance(5_000);
    expect(lines.filter((line) => line.message.includes('recovered'))).toHaveLength(1);
    await scheduler.stop();
  });
});
