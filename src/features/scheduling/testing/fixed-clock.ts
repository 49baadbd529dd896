/** A clock that only moves when told: shared by manual schedulers and in-memory leases. */
export class FixedClock {
  private current: number;

  constructor(start: Date | number = 0) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): number {
    return this.current;
  }

  date(): Date {
    return new Date(this.current);
  }

  /** Moves the clock to an instant (never backwards unless asked: tests may play a clock jump). */
  set(instant: Date | number): void {
    this.current = typeof instant === 'number' ? instant : instant.getTime();
  }

  advance(ms: number): void {
    this.current += ms;
  }
}
