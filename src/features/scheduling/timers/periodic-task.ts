import type { SchedulerTimers } from '../scheduler-ports';

/**
 * Work run every `periodMs` on the scheduler's timers, the next period armed once the previous
 * run has settled (runs never overlap). A failed run is reported to `onError` and the period goes
 * on. stop() cancels the timer and waits for a run in progress.
 */
export class PeriodicTask {
  private cancel?: () => void;
  private running?: Promise<void>;
  private stopped = true;

  constructor(
    private readonly timers: SchedulerTimers,
    private readonly periodMs: number,
    private readonly work: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
    /** Show each run to the timers (`observe`), so that a manual clock lets it settle. */
    private readonly observed = false,
  ) {}

  /** Whether the task is armed (started and not stopped). */
  get started(): boolean {
    return !this.stopped;
  }

  start(): void {
    this.stopped = false;
    this.arm();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    this.cancel = undefined;
    await this.running;
  }

  private arm(): void {
    if (this.stopped) return;
    const fire = () => {
      this.cancel = undefined;
      this.running = this.work()
        .catch(this.onError)
        .finally(() => {
          this.running = undefined;
          this.arm();
        });
      if (this.observed) this.timers.observe?.(this.running);
    };
    const instant = this.timers.now() + this.periodMs;
    this.cancel = this.timers.atPeriod ? this.timers.atPeriod(instant, this.periodMs, fire) : this.timers.at(instant, fire);
  }
}
