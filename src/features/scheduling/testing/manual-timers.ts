import type { SchedulerTimers } from '../scheduler-ports';
import { FixedClock } from './fixed-clock';

interface ManualTimer {
  at: number;
  order: number;
  fn: () => void;
}

/** Lets queued promise callbacks run (the in-memory lease and jobs resolve through them). */
const flush = async (): Promise<void> => {
  for (let round = 0; round < 20; round++) await new Promise<void>((resolve) => setImmediate(resolve));
};

/**
 * Timers on a FixedClock that fire only when a test advances time, each at its instant, in
 * order. No real timer ever schedules a run.
 */
export class ManualTimers implements SchedulerTimers {
  private readonly timers: ManualTimer[] = [];
  private readonly operations = new Set<Promise<unknown>>();
  private order = 0;

  constructor(readonly clock: FixedClock = new FixedClock()) {}

  now(): number {
    return this.clock.now();
  }

  at(instant: number, fn: () => void): () => void {
    const timer = { at: instant, order: this.order++, fn };
    this.timers.push(timer);
    return () => {
      const index = this.timers.indexOf(timer);
      if (index >= 0) this.timers.splice(index, 1);
    };
  }

  observe(operation: Promise<unknown>): void {
    this.operations.add(operation);
    const forget = () => this.operations.delete(operation);
    operation.then(forget, forget);
  }

  /** Instants of the timers waiting, earliest first. */
  get pending(): number[] {
    return this.timers.map((timer) => timer.at).sort((a, b) => a - b);
  }

  /**
   * Moves time forward by `ms`, firing every timer due on the way at its own instant (the
   * clock reads that instant while it fires), and lets the work it starts settle.
   */
  async advance(ms: number): Promise<void> {
    const target = this.clock.now() + ms;
    await this.settle();
    for (;;) {
      const next = this.nextDue(target);
      if (!next) break;
      this.timers.splice(this.timers.indexOf(next), 1);
      if (next.at > this.clock.now()) this.clock.set(next.at);
      next.fn();
      await this.settle();
    }
    if (target > this.clock.now()) this.clock.set(target);
  }

  /** Lets the work started so far reach its next wait on time, including lease I/O it was told of. */
  private async settle(): Promise<void> {
    await flush();
    while (this.operations.size > 0) {
      await Promise.allSettled([...this.operations]);
      await flush();
    }
  }

  private nextDue(target: number): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const timer of this.timers) {
      if (timer.at <= target && (!best || timer.at < best.at || (timer.at === best.at && timer.order < best.order))) best = timer;
    }
    return best;
  }
}
