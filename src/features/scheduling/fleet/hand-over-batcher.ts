import type { JobLease } from '../../job-scheduler/job-scheduler.types';
import { bound } from './claim-batcher';
import { lingering, sendTogether, type Waiting } from './linger';
import type { SchedulerLease } from '../scheduler-ports';

interface PendingHandOver extends Waiting<boolean[]> {
  leases: readonly JobLease[];
}

/**
 * Hand-overs (`expireMany`: claims given up unrun, each row left RUNNING with its lease run out
 * so that the take-over runs it elsewhere) asked within a few ms of each other go to the database
 * together, one statement per 1,000 leases, instead of one each. An instance that stops while an
 * instant's runs start refuses each of them on its own: 1,319 hand-over statements in a few
 * seconds in one overloaded 100,000-schedule run, each needing a pool connection. Each caller
 * still learns, per lease, whether it was this owner's.
 *
 * A statement the database could not answer tells every caller it carried the error (nothing to
 * retry: those leases run out by themselves and are taken over one lease later, as after a
 * crash). An error no retry fixes sends each caller's leases alone, so that one bad lease never
 * costs the others their hand-over.
 */
export const withHandOverBatching = (lease: SchedulerLease): SchedulerLease => {
  const port = bound(lease);
  const { expireMany } = port;
  if (!expireMany) return lease;

  const alone = (entry: PendingHandOver): Promise<void> => expireMany(entry.leases).then(entry.resolve, entry.reject);

  const send = (batch: PendingHandOver[]): Promise<void> =>
    sendTogether(
      batch,
      () => expireMany(batch.flatMap((entry) => entry.leases)),
      (handed) => {
        let at = 0;
        for (const entry of batch) {
          entry.resolve(handed.slice(at, at + entry.leases.length));
          at += entry.leases.length;
        }
      },
      alone,
    );

  const add = lingering<PendingHandOver>((batch) => void send(batch));
  return {
    ...port,
    expireMany: (leases) =>
      leases.length === 0
        ? Promise.resolve([])
        : new Promise<boolean[]>((resolve, reject) => add({ leases: leases.map(({ id, ownerToken }) => ({ id, ownerToken })), resolve, reject })),
  };
};
