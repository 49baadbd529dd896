import { type HoldClock, monotonicClock } from './run/lease-hold';

/** Time for timers: now, and a call at (or after) an instant; returns a function that cancels it. */
export interface InstantTimers {
  now(): number;
  at(instant: number, fn: () => void): () => void;
}

/** Chained timeouts stay far below Node's 2^31-1 ms limit and bound the delay past a wall-clock jump. */
const RECHECK_MS = 60_000;

/** Calls `fn` once `read()` reaches `due`, in timeouts of a minute at most; returns a function that cancels it. */
const whenReached = (read: () => number, due: number, fn: () => void): (() => void) => {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const delay = due - read();
    if (delay <= 0) {
      fn();
      return;
    }
    timer = setTimeout(arm, Math.min(delay, RECHECK_MS));
  };
  // Never from inside the call that arms it, even for an instant already passed: the caller keeps
  // the function this returns, and a callback run before that would find a stale one.
  timer = setTimeout(arm, Math.min(Math.max(due - read(), 0), RECHECK_MS));
  return () => clearTimeout(timer);
};

/**
 * System timers: an instant on the wall clock (a due occurrence), re-checked at least every minute
 * against it; a period (periodic work: change polls, take-over scans) is a duration on the
 * monotonic clock, so that a wall-clock step back (NTP) does not hold it up by the step's size.
 * Lease holders' deadlines run on the monotonic clock too.
 */
export const systemTimers: InstantTimers & { holdClock: HoldClock; atPeriod(instant: number, periodMs: number, fn: () => void): () => void } = {
  holdClock: monotonicClock,
  now: () => Date.now(),
  at: (instant, fn) => whenReached(() => Date.now(), instant, fn),
  atPeriod: (_instant, periodMs, fn) => whenReached(() => monotonicClock.now(), monotonicClock.now() + periodMs, fn),
};
