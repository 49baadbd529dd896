/**
 * Skews this process's wall clock: `Date.now()` and `new Date()` read `offsetMs` off, as on a
 * node whose clock is wrong by hours. Timers and monotonic clocks are untouched, as they would be.
 * The lease must not care: every expiry is judged by the database clock.
 */
export const skewProcessClock = (offsetMs: number): void => {
  if (offsetMs === 0) return;
  const RealDate = Date;
  class SkewedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + offsetMs);
      else super(...(args as [string | number | Date]));
    }

    static override now(): number {
      return RealDate.now() + offsetMs;
    }
  }
  globalThis.Date = SkewedDate as DateConstructor;
};
