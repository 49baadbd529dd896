import { isRetryable } from '../../job-scheduler/run/lease-hold';

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

/**
 * Sends a batch's entries in one statement and tells each its own answer (`deliver`); a batch of
 * one goes `alone`. A statement the database could not answer tells every entry its error: each
 * retries, or gives up, as it would alone. An error no retry fixes sends each entry alone, so
 * that one bad entry never costs the others theirs.
 */
export const sendTogether = async <T extends Waiting<never>, R>(
  batch: readonly T[],
  statement: () => Promise<R>,
  deliver: (answer: R) => void,
  alone: (entry: T) => Promise<void>,
): Promise<void> => {
  if (batch.length === 1) return alone(batch[0]);
  let answer: R;
  try {
    answer = await statement();
  } catch (error) {
    if (isRetryable(error)) for (const entry of batch) entry.reject(error);
    else await Promise.all(batch.map(alone));
    return;
  }
  deliver(answer);
};
