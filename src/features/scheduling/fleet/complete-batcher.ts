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

/**
 * The completes asked within COMPLETE_LINGER_MS of each other (the runs of occurrences due
 * together end together) go to the database as one statement (`completeMany`, each row fenced on its own id and
 * owner token), instead of one each: fewer round trips, pool checkouts and statements per run.
 * Each caller still learns whether its own complete applied, and each row gets its own data (the
 * run's handlerMs); after a failed statement each complete is sent alone with its data, so that
 * one statement's failure never fails the runs it carried. Completes with options (a retry) go
 * alone.
 */
export const withCompleteBatching = (lease: SchedulerLease): SchedulerLease => {
  const port = bound(lease);
  const { completeMany } = port;
  if (!completeMany) return lease;
  let pending: PendingComplete[] = [];
  const send = async (batch: PendingComplete[]): Promise<void> => {
    if (batch.length === 1) {
      const [only] = batch;
      return port.complete(only.lease, only.data).then(only.resolve, only.reject);
    }
    let applied: boolean[];
    try {
      applied = await completeMany(batch.map((entry) => (entry.data === undefined ? entry.lease : { ...entry.lease, data: entry.data })));
    } catch {
      // The statement failed (a serialization failure, a dropped connection): it says nothing of
      // any one run. Each is completed on its own, as `again` (the statement may have committed
      // before its answer was lost); a run whose own complete fails is retried by its hold.
      await Promise.all(batch.map((entry) => port.complete(entry.lease, entry.data, { again: true }).then(entry.resolve, entry.reject)));
      return;
    }
    batch.forEach((entry, index) => entry.resolve(applied[index]));
  };
  const flush = (): void => {
    const batch = pending;
    pending = [];
    for (let start = 0; start < batch.length; start += COMPLETES_PER_STATEMENT) void send(batch.slice(start, start + COMPLETES_PER_STATEMENT));
  };
  return {
    ...port,
    complete: (value, data, options) => {
      if (options !== undefined) return port.complete(value, data, options);
      return new Promise<boolean>((resolve, reject) => {
        if (pending.push({ lease: { id: value.id, ownerToken: value.ownerToken }, data, resolve, reject }) === 1) setTimeout(flush, COMPLETE_LINGER_MS);
      });
    },
  };
};
