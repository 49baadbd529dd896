import { JobLeaseDatabaseError } from '../../job-scheduler/job-scheduler.errors';
import type { JobLease } from '../../job-scheduler/job-scheduler.types';
import { bound } from './claim-batcher';
import type { SchedulerLease } from '../scheduler-ports';

interface PendingComplete {
  lease: JobLease;
  /** This run's own data (its handler's run time), carried on its row of the statement. */
  data: unknown;
  resolve(applied: boolean): void;
  reject(error: unknown): void;
}

/** Runs per complete statement, at most. */
const COMPLETES_PER_STATEMENT = 1_000;
/**
 * How long a complete waits for others to share its statement: runs that end a few ms apart
 * (tenants of a fan-out, whose slots do not wait for it) are completed together.
 */
export const COMPLETE_LINGER_MS = 5;

const AGAIN = { again: true } as const;

/** The database could not answer (a timeout, a dropped connection, a serialization failure): the statement says nothing of any one run. */
const isTransient = (error: unknown): boolean => error instanceof JobLeaseDatabaseError && error.retryable;

/**
 * The completes asked within COMPLETE_LINGER_MS of each other (the runs of occurrences due
 * together end together) go to the database as one statement (`completeMany`, each row fenced on
 * its own id and owner token), instead of one each: fewer round trips, pool checkouts and
 * statements per run. Each caller still learns whether its own complete applied, and each row
 * gets its own data (the run's handlerMs).
 *
 * Retries (`{ again }`: a complete whose first answer was lost) are batched the same way, in
 * statements of their own. A statement the database could not answer is sent once more, whole, as
 * a retry (it may have committed before its answer was lost); if that fails too, every complete
 * it carried fails with the error, and each run's hold retries it within its lease (batched
 * again). One failed statement never becomes a statement per run: under overload (a pool with no
 * free connection for seconds, a GC-bound process) that turned 30 failed statements into 12,000.
 * A statement that fails otherwise (an error no retry fixes) sends each complete alone, so that
 * one bad run never fails the others.
 */
export const withCompleteBatching = (lease: SchedulerLease): SchedulerLease => {
  const port = bound(lease);
  const { completeMany } = port;
  if (!completeMany) return lease;
  const pending = { first: [] as PendingComplete[], again: [] as PendingComplete[] };

  const alone = (entry: PendingComplete, again: boolean): Promise<void> =>
    port.complete(entry.lease, entry.data, again ? AGAIN : undefined).then(entry.resolve, entry.reject);

  const send = async (batch: PendingComplete[], again: boolean): Promise<void> => {
    if (batch.length === 1) return alone(batch[0], again);
    const rows = batch.map((entry) => (entry.data === undefined ? entry.lease : { ...entry.lease, data: entry.data }));
    let applied: boolean[];
    try {
      applied = await completeMany(rows, undefined, again ? AGAIN : undefined);
    } catch (error) {
      if (!isTransient(error)) {
        await Promise.all(batch.map((entry) => alone(entry, true)));
        return;
      }
      if (!again) return send(batch, true);
      for (const entry of batch) entry.reject(error);
      return;
    }
    batch.forEach((entry, index) => entry.resolve(applied[index]));
  };

  const flush = (): void => {
    for (const again of [false, true]) {
      const batch = again ? pending.again : pending.first;
      if (again) pending.again = [];
      else pending.first = [];
      for (let start = 0; start < batch.length; start += COMPLETES_PER_STATEMENT) void send(batch.slice(start, start + COMPLETES_PER_STATEMENT), again);
    }
  };

  return {
    ...port,
    complete: (value, data, options) => {
      if (options !== undefined && options.again !== true) return port.complete(value, data, options);
      return new Promise<boolean>((resolve, reject) => {
        const queue = options === undefined ? pending.first : pending.again;
        const waiting = pending.first.length + pending.again.length;
        queue.push({ lease: { id: value.id, ownerToken: value.ownerToken }, data, resolve, reject });
        if (waiting === 0) setTimeout(flush, COMPLETE_LINGER_MS);
      });
    },
  };
};
