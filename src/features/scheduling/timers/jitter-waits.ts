import type { AheadClaim } from '../occurrence/held-claim';
import type { SchedulerTimers } from '../scheduler-ports';

/**
 * The random delays before runs start (`jitterMs`), each cancellable: the scheduler's stop()
 * ends every wait in progress, so that no run starts after it and no timer keeps the process,
 * and hands over the claims ahead those waits held (a claim is never dropped unrun).
 */
export class JitterWaits {
  private readonly waits = new Map<() => void, AheadClaim | undefined>();

  constructor(
    private readonly timers: SchedulerTimers,
    private readonly random: () => number = () => Math.random(),
  ) {}

  /**
   * Resolves after a random delay below `jitterMs` (true), or at once when cancelled (false: the
   * run does not start, and `holding`, the claim the wait holds, is cancelAll's to hand over).
   */
  wait(jitterMs: number, holding?: AheadClaim): Promise<boolean> {
    if (jitterMs <= 0) return Promise.resolve(true);
    const delay = Math.floor(this.random() * jitterMs);
    return new Promise((resolve) => {
      const done = (waited: boolean) => {
        this.waits.delete(cancel);
        resolve(waited);
      };
      const stopTimer = this.timers.at(this.timers.now() + delay, () => done(true));
      const cancel = () => {
        stopTimer();
        done(false);
      };
      this.waits.set(cancel, holding);
    });
  }

  /** Ends every wait in progress now: the claims they held, for the caller to hand over. */
  cancelAll(): AheadClaim[] {
    const held: AheadClaim[] = [];
    for (const [cancel, holding] of [...this.waits]) {
      if (holding) held.push(holding);
      cancel();
    }
    return held;
  }
}
