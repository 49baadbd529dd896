import type { JobAcquireOptions } from '../../../src/features';
import { JobLeaseDatabaseError } from '../../../src/features/job-scheduler/job-scheduler.errors';
import { ClaimBatcher, claimBatchSize } from '../../../src/features/scheduling/fleet/claim-batcher';
import { FixedClock, InMemoryJobLease } from '../../../src/features/testing';

/** The in-memory lease, with every claim statement it is asked for written down. */
const recordingLease = () => {
  const lease = new InMemoryJobLease(new FixedClock(Date.UTC(2026, 0, 1)));
  const calls: string[][] = [];
  const singles: string[] = [];
  const acquireMany = lease.acquireMany.bind(lease);
  const acquire = lease.acquire.bind(lease);
  lease.acquireMany = (runs) => {
    calls.push(runs.map((run) => run.code));
    return acquireMany(runs);
  };
  lease.acquire = (options) => {
    singles.push(options.code);
    return acquire(options);
  };
  return { lease, calls, singles };
};

const run = (index: number): JobAcquireOptions => ({ code: `jobs.job-${index}`, runKey: '2026-01-01T00:00:00.000Z', leaseMs: 60_000 });

describe('ClaimBatcher', () => {
  it('claims the acquires of one turn with a few statements, walked from a random offset', async () => {
    const { lease, calls, singles } = recordingLease();
    const batcher = new ClaimBatcher(lease, () => 0.5);
    const results = await Promise.all(Array.from({ length: 100 }, (_, index) => batcher.acquire(run(index))));
    expect(results.every((result) => result.acquired)).toBe(true);
    expect(singles).toEqual([]);
    expect(calls).toHaveLength(Math.ceil(100 / claimBatchSize(100)));
    // The walk starts half-way (random 0.5): the first statement begins at the 51st acquire.
    expect(calls[0][0]).toBe('jobs.job-50');
    expect(calls.flat().sort()).toEqual(Array.from({ length: 100 }, (_, index) => `jobs.job-${index}`).sort());
  });

  it('sends an acquire alone in its turn as it is', async () => {
    const { lease, calls, singles } = recordingLease();
    const batcher = new ClaimBatcher(lease, Math.random);
    expect((await batcher.acquire(run(1))).acquired).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await batcher.acquire(run(2))).acquired).toBe(true);
    expect(calls).toEqual([]);
    expect(singles).toEqual(['jobs.job-1', 'jobs.job-2']);
  });

  it('an invalid run fails alone: its statement is sent again one run at a time', async () => {
    const { lease, singles } = recordingLease();
    const batcher = new ClaimBatcher(lease, () => 0);
    const settled = await Promise.allSettled([batcher.acquire(run(1)), batcher.acquire({ code: ' ', runKey: 'x' }), batcher.acquire(run(3))]);
    expect(settled.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ name: 'InvalidJobIdentityOptionsError' });
    expect(singles).toHaveLength(3);
  });

  it('a claim the database refuses fails every run of that statement with the database error', async () => {
    const { lease } = recordingLease();
    const refused = new JobLeaseDatabaseError('Job lease acquire failed: connection refused', { operation: 'acquire', retryable: true });
    lease.acquireMany = () => Promise.reject(refused);
    const batcher = new ClaimBatcher(lease, () => 0);
    const settled = await Promise.allSettled([batcher.acquire(run(1)), batcher.acquire(run(2))]);
    expect(settled).toEqual([
      { status: 'rejected', reason: refused },
      { status: 'rejected', reason: refused },
    ]);
  });
});
