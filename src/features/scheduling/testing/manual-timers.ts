import type { SchedulerTimers } from '../scheduler-ports';
import { FixedClock } from './fixed-clock';

interface ManualTimer {
  at: number;
  order: number;
  fn: () => void;
  /** Set for a period of periodic work (SchedulerTimers.atPeriod). */
  periodMs?: number;
}

export interface ManualTimersOptions {
  /**
   * Whether periodic work (a PeriodicTask, such as the take-over scan) would find nothing to do
   * now. While it holds and nothing else is due or in flight, advance() moves such a timer on by
   * whole periods without firing it: the same outcome, without a firing per period (a year of a
   * 30 s scan is a million). Without it, every period fires.
   */
  periodicWorkIdle?: () => boolean;
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

  constructor(
    readonly clock: FixedClock = new FixedClock(),
    private readonly options: ManualTimersOptions = {},
  ) {}

  now(): number {
    return this.clock.now();
  }

  at(instant: number, fn: () => void): () => void {
    return this.arm({ at: instant, order: this.order++, fn });
  }

  atPeriod(instant: number, periodMs: number, fn: () => void): () => void {
    return this.arm({ at: instant, order: this.order++, fn, periodMs });
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
      if (next.periodMs !== undefined && this.options.periodicWorkIdle?.()) {
        this.skipIdlePeriods(next, next.periodMs, target);
        continue;
      }
      this.timers.splice(this.timers.indexOf(next), 1);
      if (next.at > this.clock.now()) this.clock.set(next.at);
      next.fn();
      await this.settle();
    }
    if (target > this.clock.now()) this.clock.set(target);
  }

  private arm(timer: ManualTimer): () => void {
    this.timers.push(timer);
    return () => {
      const index = this.timers.indexOf(timer);
      if (index >= 0) this.timers.splice(index, 1);
    };
  }

  /**
   * The periodic timer is due and its work would find nothing; nothing is in flight (settled),
   * so nothing changes before the next other timer: it moves to its first period from that
   * timer's instant on (or past the target), as if each period between had fired and found
   * nothing, re-armed each time (hence a new order).
   */
  private skipIdlePeriods(timer: ManualTimer, periodMs: number, target: number): void {
    let until = target + 1;
    for (const other of this.timers) if (other !== timer && other.at < until) until = other.at;
    timer.at += Math.max(1, Math.ceil((until - timer.at) / periodMs)) * periodMs;
    timer.order = this.order++;
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
