import type { OverlapPolicy } from '../scheduling.types';

/**
 * What one job occupies on this instance, as its overlap policy sees it: the handlers running
 * here (never the claims in flight: a slow claim is not a run), the occurrences admitted and not
 * yet settled, and the one queued behind them (overlap 'queue').
 */
export class JobOccupancy<Queued = unknown> {
  /** Handlers of this job running here now. */
  running = 0;
  /** Occurrences admitted here whose claim is in flight or whose run has not settled. */
  admitted = 0;
  /** The occurrence waiting its turn (overlap 'queue': one at most). */
  queued?: Queued;
  /** Runs with a proven lease waiting for the running one to settle (overlap 'queue'). */
  private readonly waiting: Array<() => void> = [];

  /** Whether an occurrence due now overlaps the job's work here: a run (for 'queue', any admitted occurrence). */
  overlaps(overlap: OverlapPolicy): boolean {
    return this.running > 0 || (overlap === 'queue' && this.admitted > 0);
  }

  /**
   * Right before a handler starts, its lease proven: a function to call when it settles, or null
   * when it must not start now (a run of the job goes on here and the job skips overlaps). With
   * 'queue' it waits its turn (its lease held meanwhile): a promise then, and only then (an
   * occurrence due together with thousands of others starts without a wait of its own).
   */
  enter(overlap: OverlapPolicy): (() => void) | null | Promise<() => void> {
    if (this.running === 0) return this.occupy();
    return overlap === 'queue' ? this.turn() : null;
  }

  private async turn(): Promise<() => void> {
    while (this.running > 0) await new Promise<void>((resolve) => this.waiting.push(resolve));
    return this.occupy();
  }

  private occupy(): () => void {
    this.running++;
    return () => {
      this.running--;
      this.waiting.shift()?.();
    };
  }
}
