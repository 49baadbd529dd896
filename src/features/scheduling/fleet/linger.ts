/**
 * How long a write waits for others to share its statement: runs that end (or are given up) a few
 * ms apart, such as the tenants of a fan-out, whose slots do not wait for each other, go together.
 */
export const LINGER_MS = 5;

/** An entry of a batch: told its own answer, or the statement's error. */
export interface Waiting<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** A collector: each entry added within LINGER_MS of the first goes to `flush` in one batch. */
export const lingering = <T>(flush: (batch: T[]) => void): ((entry: T) => void) => {
  let pending: T[] = [];
  return (entry) => {
    if (pending.push(entry) > 1) return;
    setTimeout(() => {
      const batch = pending;
      pending = [];
      flush(batch);
    }, LINGER_MS);
  };
};
