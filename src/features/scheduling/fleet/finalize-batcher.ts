import { JobLeaseDatabaseError } from '../../job-scheduler/job-scheduler.errors';
import type { JobFinalizeOptions, JobLease, JobLeaseWithData } from '../../job-scheduler/job-scheduler.types';
import { bound } from './claim-batcher';
import type { SchedulerLease } from '../scheduler-ports';

interface PendingFinalize {
  lease: JobLease;
  /** This run's own data (its handler's run time, its error), carried on its row of the statement. */
  data: unknown;
  resolve(applied: boolean): void;
  reject(error: unknown): void;
}

type Finalize = (lease: JobLease, data?: unknown, options?: JobFinalizeOptions) => Promise<boolean>;
type FinalizeMany = (leases: readonly JobLeaseWithData[], data?: unknown, options?: JobFinalizeOptions) => Promise<boolean[]>;

/** Runs per complete or fail statement, at most. */
const FINALIZES_PER_STATEMENT = 1_000;
/**
 * How long a complete (or fail) waits for others to share its statement: runs that end a few ms
 * apart (tenants of a fan-out, whose slots do not wait for it) are finalized together.
 */
export const FINALIZE_LINGER_MS = 5;

const AGAIN = { again: true } as const;

/** The database could not answer (a timeout, a dropped connection, a serialization failure): the statement says nothing of any one run. */
export const isTransient = (error: unknown): boolean => error instanceof JobLeaseDatabaseError && error.retryable;

/**
 * One outcome's finalizations asked within FINALIZE_LINGER_MS of each other, sent as one
 * statement (`many`, each row fenced on its own id and owner token) instead of one each. Each
 * caller still learns whether its own applied, and each row gets its own data.
 *
 * Retries (`{ again }`: a finalization whose first answer was lost) are batched the same way, in
 * statements of their own. A statement the database could not answer is sent once more, whole,
 * as a retry (it may have committed before its answer was lost); if that fails too, every run it
 * carried is told the error, and each run's hold retries within its lease (batched again). One
 * failed statement never becomes a statement per run: under overload (no free pool connection for
 * seconds, a GC-bound process) that turned failed statements into 12,000 single completes per
 * instance. A statement that fails otherwise (an error no retry fixes) sends each run alone, so
 * that one bad run never fails the others.
 */
const batched = (single: Finalize, many: FinalizeMany): Finalize => {
  let first: PendingFinalize[] = [];
  let again: PendingFinalize[] = [];

  const alone = (entry: PendingFinalize, retry: boolean): Promise<void> =>
    single(entry.lease, entry.data, retry ? AGAIN : undefined).then(entry.resolve, entry.reject);

  const send = async (batch: PendingFinalize[], retry: boolean): Promise<void> => {
    if (batch.length === 1) return alone(batch[0], retry);
    const rows = batch.map((entry) => (entry.data === undefined ? entry.lease : { ...entry.lease, data: entry.data }));
    let applied: boolean[];
    try {
      applied = await many(rows, undefined, retry ? AGAIN : undefined);
    } catch (error) {
      if (!isTransient(error)) {
        await Promise.all(batch.map((entry) => alone(entry, true)));
        return;
      }
      if (!retry) return send(batch, true);
      for (const entry of batch) entry.reject(error);
      return;
    }
    batch.forEach((entry, index) => entry.resolve(applied[index]));
  };

  const sendAll = (batch: PendingFinalize[], retry: boolean): void => {
    for (let start = 0; start < batch.length; start += FINALIZES_PER_STATEMENT) void send(batch.slice(start, start + FINALIZES_PER_STATEMENT), retry);
  };

  const flush = (): void => {
    const firsts = first;
    const agains = again;
    first = [];
    again = [];
    sendAll(firsts, false);
    sendAll(agains, true);
  };

  return (value, data, options) => {
    if (options !== undefined && options.again !== true) return single(value, data, options);
    return new Promise<boolean>((resolve, reject) => {
      const waiting = first.length + again.length;
      (options === undefined ? first : again).push({ lease: { id: value.id, ownerToken: value.ownerToken }, data, resolve, reject });
      if (waiting === 0) setTimeout(flush, FINALIZE_LINGER_MS);
    });
  };
};

/**
 * The lease with completes (`completeMany`) and fails (`failMany`) batched where it can finalize
 * many runs at once: the runs of occurrences due together end together, and so do the runs a
 * shared outage fails and the claims a bulk pause or removal ends.
 */
export const withFinalizeBatching = (lease: SchedulerLease): SchedulerLease => {
  const port = bound(lease);
  const { completeMany, failMany } = port;
  if (!completeMany && !failMany) return lease;
  return {
    ...port,
    ...(completeMany && { complete: batched(port.complete, completeMany) }),
    ...(failMany && { fail: batched(port.fail, failMany) }),
  };
};
