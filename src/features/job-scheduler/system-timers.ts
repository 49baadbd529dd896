import { type HoldClock, monotonicClock } from './run/lease-hold';

/** Time for timers: now, and a call at (or after) an instant; returns a function that cancels it. */
export interface InstantTimers {
  now(): number;
  at(instant: number, fn: () => void): () => void;
}

/**
 * System timers: chained one-shot timeouts, re-checked at least every minute against the clock.
 * Lease holders' deadlines run on the monotonic clock instead.
 */
export const systemTimers: InstantTimers & { holdClock: HoldClock } = {
  holdClock: monotonicClock,
  now: () => Date.now(),
  at: (instant, fn) => {
    // Re-checking every minute bounds the delay past a wall-clock jump, and keeps each timeout
    // far below Node's 2^31-1 ms limit however far the instant is.
    const RECHECK_MS = 60_000;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      const delay = instant - Date.now();
      if (delay <= 0) {
        fn();
        return;
      }
      timer = setTimeout(arm, Math.min(delay, RECHECK_MS));
    };
    // Never from inside `at`, even for an instant already passed: the caller keeps the function
    // this returns, and a callback run before that would find a stale one.
    timer = setTimeout(arm, Math.min(Math.max(instant - Date.now(), 0), RECHECK_MS));
    return () => clearTimeout(timer);
  },
};
