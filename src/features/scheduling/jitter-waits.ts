import type { SchedulerTimers } from './scheduler-ports';

/**
 * The random delays before runs start (`jitterMs`), each cancellable: the scheduler's stop()
 * ends every wait in progress, so that no run starts after it and no timer keeps the process.
 */
export class JitterWaits {
  private readonly waits = new Set<() => void>();

  constructor(
    private readonly timers: SchedulerTimers,
    private readonly random: () => number = () => Math.random(),
  ) {}

  /** Resolves after a random delay below `jitterMs`, or at once when cancelled. */
  wait(jitterMs: number): Promise<void> {
    if (jitterMs <= 0) return Promise.resolve();
    const delay = Math.floor(this.random() * jitterMs);
    return new Promise((resolve) => {
      const done = () => {
        this.waits.delete(cancel);
        resolve();
      };
      const stopTimer = this.timers.at(this.timers.now() + delay, done);
      const cancel = () => {
        stopTimer();
        done();
      };
      this.waits.add(cancel);
    });
  }

  /** Ends every wait in progress now. */
  cancelAll(): void {
    for (const cancel of [...this.waits]) cancel();
  }
}
