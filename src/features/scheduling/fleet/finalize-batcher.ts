import type { JobFinalizeOptions, JobLease, JobLeaseWithData } from '../../job-scheduler/job-scheduler.types';
import { isRetryable } from '../../job-scheduler/run/lease-hold';
import { bound } from './claim-batcher';
import { LINGER_MS, type Waiting } from './linger';
import type { SchedulerLease } from '../scheduler-ports';

interface PendingFinalize extends Waiting<boolean> {
  lease: JobLease;
  /** This run's own data (its handler's run time, its error), carried on its row of the statement. */
  data: unknown;
}

type Finalize = (lease: JobLease, data?: unknown, options?: JobFinalizeOptions) => Promise<boolean>;
type FinalizeMany = (leases: readonly JobLeaseWithData[], data?: unknown, options?: JobFinalizeOptions) => Promise<boolean[]>;

/**
 * Complete and fail statements in flight at once, at most, per instance (shared by both). Each
 * carries up to FINALIZES_PER_STATEMENT runs; while they run, the runs that end join the next
 * one, so an overloaded database gets bigger statements, not more of them, and the pool keeps
 * connections for claims, heartbeats and polls. Unbounded, 100,000 runs due together on 3
 * instances and a 2-core database (a CPU profiler slowing each instance) left 27,746 rows
 * unfinished 55 s later, pool checkouts timing out; with 2, none.
 */
export const FINALIZE_STATEMENTS_IN_FLIGHT = 2;

/** A count of statement slots: take one (waiting for it), give it back. */
class StatementSlots {
  private readonly waiting: Array<() => void> = [];

  constructor(private free: number) {}

  take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** Runs per complete or fail statement, at most. */
const FINALIZES_PER_STATEMENT = 1_000;
const AGAIN = { again: true } as const;

/**
 * One outcome's finalizations asked within LINGER_MS of each other, sent as one
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
const batched = (single: Finalize, many: FinalizeMany, slots: StatementSlots): Finalize => {
  const first: PendingFinalize[] = [];
  const again: PendingFinalize[] = [];
  let lingering = false;
  let draining = false;

  const alone = (entry: PendingFinalize, retry: boolean): Promise<void> =>
    single(entry.lease, entry.data, retry ? AGAIN : undefined).then(entry.resolve, entry.reject);

  const send = async (batch: PendingFinalize[], retry: boolean): Promise<void> => {
    if (batch.length === 1) return alone(batch[0], retry);
    const rows = batch.map((entry) => (entry.data === undefined ? entry.lease : { ...entry.lease, data: entry.data }));
    let applied: boolean[];
    try {
      applied = await many(rows, undefined, retry ? AGAIN : undefined);
    } catch (error) {
      // A failure a retry may fix says nothing of any one run; any other is sent run by run.
      if (!isRetryable(error)) {
        await Promise.all(batch.map((entry) => alone(entry, true)));
        return;
      }
      if (!retry) return send(batch, true);
      for (const entry of batch) entry.reject(error);
      return;
    }
    batch.forEach((entry, index) => entry.resolve(applied[index]));
  };

  // Each statement takes a slot, formed once it has one: what comes meanwhile joins it.
  const drain = async (): Promise<void> => {
    draining = true;
    while (first.length + again.length > 0) {
      await slots.take();
      const retry = first.length === 0;
      const batch = (retry ? again : first).splice(0, FINALIZES_PER_STATEMENT);
      const give = (): void => slots.give();
      void send(batch, retry).then(give, give);
    }
    draining = false;
  };

  return (value, data, options) => {
    if (options !== undefined && options.again !== true) return single(value, data, options);
    return new Promise<boolean>((resolve, reject) => {
      (options === undefined ? first : again).push({ lease: { id: value.id, ownerToken: value.ownerToken }, data, resolve, reject });
      if (lingering || draining) return;
      lingering = true;
      setTimeout(() => {
        lingering = false;
        void drain();
      }, LINGER_MS);
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
  const slots = new StatementSlots(FINALIZE_STATEMENTS_IN_FLIGHT);
  return {
    ...port,
    ...(completeMany && { complete: batched(port.complete, completeMany, slots) }),
    ...(failMany && { fail: batched(port.fail, failMany, slots) }),
  };
};
