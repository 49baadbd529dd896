import type { JobLeaseDatabaseError } from '../../src/features';
import { FixedClock, InMemoryJobLease } from '../../src/features/testing';

/** The acquireMany calls a lease received: how many runs each claimed, and whether it was a claim again. */
export type ClaimCalls = Array<{ runs: number; again: boolean }>;

/**
 * An in-memory lease whose first acquireMany claims its runs (they commit) and then throws
 * `error`: the answer of a claim that reached the database is lost. Every call is recorded.
 */
export const leaseLosingFirstClaimAnswer = (error: JobLeaseDatabaseError): { clock: FixedClock; lease: InMemoryJobLease; calls: ClaimCalls } => {
  const clock = new FixedClock(0);
  const lease = new InMemoryJobLease(clock);
  const calls: ClaimCalls = [];
  const acquireMany = lease.acquireMany.bind(lease);
  lease.acquireMany = async (runs, options) => {
    calls.push({ runs: runs.length, again: options?.again === true });
    const results = await acquireMany(runs, options);
    if (calls.length === 1) throw error;
    return results;
  };
  return { clock, lease, calls };
};
