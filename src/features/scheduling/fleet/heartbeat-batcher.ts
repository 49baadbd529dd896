import type { JobLease } from '../../job-scheduler/job-scheduler.types';
import { bound } from './claim-batcher';
import { lingering, sendTogether, type Waiting } from './linger';
import type { SchedulerLease } from '../scheduler-ports';

interface PendingHeartbeat extends Waiting<boolean> {
  lease: JobLease;
  timeoutMs: number | undefined;
}

/** Leases per heartbeat statement, at most. */
const HEARTBEATS_PER_STATEMENT = 1_000;

/** The tightest bound of the heartbeats a statement carries (undefined: none was given). */
const tightest = (batch: readonly PendingHeartbeat[]): number | undefined => {
  let bound: number | undefined;
  for (const { timeoutMs } of batch) if (timeoutMs !== undefined && (bound === undefined || timeoutMs < bound)) bound = timeoutMs;
  return bound;
};

/**
 * Heartbeats asked within a few ms of each other go to the database as one statement
 * (`heartbeatMany`, each row fenced on its own id and owner token) instead of one each. Runs
 * claimed together and started together heartbeat together: one statement each, 30,000 runs
 * held on one instance would send 30,000 statements every heartbeat interval. Each hold still
 * learns whether its own lease is held, and proves it from the instant it asked (before the
 * wait), never later than the write.
 *
 * A statement the database could not answer tells every hold it carried the error: each retries
 * as it would a heartbeat of its own (backoff and jitter, until its deadline), batched again. An
 * error no retry fixes sends each heartbeat alone, so that one bad lease never costs the others
 * theirs.
 */
export const withHeartbeatBatching = (lease: SchedulerLease): SchedulerLease => {
  const port = bound(lease);
  const { heartbeatMany } = port;
  if (!heartbeatMany) return lease;

  const alone = (entry: PendingHeartbeat): Promise<void> =>
    port.heartbeat(entry.lease, entry.timeoutMs === undefined ? undefined : { timeoutMs: entry.timeoutMs }).then(entry.resolve, entry.reject);

  const send = (batch: PendingHeartbeat[]): Promise<void> => {
    const timeoutMs = tightest(batch);
    return sendTogether(
      batch,
      () =>
        heartbeatMany(
          batch.map((entry) => entry.lease),
          timeoutMs === undefined ? undefined : { timeoutMs },
        ),
      (held) => batch.forEach((entry, index) => entry.resolve(held[index])),
      alone,
    );
  };

  const add = lingering<PendingHeartbeat>((batch) => {
    for (let start = 0; start < batch.length; start += HEARTBEATS_PER_STATEMENT) void send(batch.slice(start, start + HEARTBEATS_PER_STATEMENT));
  });

  return {
    ...port,
    heartbeat: (value, options) =>
      new Promise<boolean>((resolve, reject) => add({ lease: { id: value.id, ownerToken: value.ownerToken }, timeoutMs: options?.timeoutMs, resolve, reject })),
  };
};
