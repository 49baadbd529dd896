/** Calls `fn` after `delayMs`; returns a function that cancels it. */
export type TimerScheduler = (fn: () => void, delayMs: number) => () => void;

/** Node timers, unreferenced: the work being protected keeps the process alive, not its heartbeat. */
export const nodeTimerScheduler: TimerScheduler = (fn, delayMs) => {
  const timer = setTimeout(fn, delayMs);
  timer.unref();
  return () => clearTimeout(timer);
};

/**
 * Keeps one lease alive: a chain of one-shot timers (never an interval, so beats never overlap
 * and a slow database only delays the next one). At the first beat that finds the lease gone or
 * cannot reach the database, it stops and reports the loss once.
 */
export class LeaseHeartbeat {
  private cancel: (() => void) | undefined;
  private inFlight: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly intervalMs: number,
    private readonly beat: () => Promise<boolean>,
    private readonly onLost: (cause?: unknown) => void,
    private readonly timers: TimerScheduler = nodeTimerScheduler,
  ) {}

  start(): void {
    if (this.intervalMs > 0) this.schedule();
  }

  /** Stops the chain and waits for a beat already sent, so none lands after finalization starts. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    await this.inFlight;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.cancel = this.timers(() => {
      this.inFlight = this.tick();
    }, this.intervalMs);
  }

  private async tick(): Promise<void> {
    let owned: boolean;
    try {
      owned = await this.beat();
    } catch (error) {
      if (!this.stopped) this.lose(error);
      return;
    }
    if (this.stopped) return;
    if (owned) this.schedule();
    else this.lose();
  }

  private lose(cause?: unknown): void {
    this.stopped = true;
    this.onLost(cause);
  }
}
