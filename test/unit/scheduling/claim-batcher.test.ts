import type { JobAcquireManyRun, JobAcquireOptions } from '../../../src/features';
import { JobLeaseDatabaseError } from '../../../src/features/job-scheduler/job-scheduler.errors';
import { ClaimBatcher, claimBatchSize, withClaimBatching } from '../../../src/features/scheduling/fleet/claim-batcher';
import { FixedClock, InMemoryJobLease } from '../../../src/features/testing';

/** The in-memory lease, with every claim statement it is asked for written down. */
const recordingLease = () => {
  const lease = new InMemoryJobLease(new FixedClock(Date.UTC(2026, 0, 1)));
  const calls: string[][] = [];
  const singles: string[] = [];
  const again: boolean[] = [];
  const acquireMany = lease.acquireMany.bind(lease);
  const acquire = lease.acquire.bind(lease);
  lease.acquireMany = (runs, options) => {
    calls.push(runs.map((run) => run.code));
    again.push(options?.again === true);
    return acquireMany(runs, options);
  };
  lease.acquire = (options) => {
    singles.push(options.code);
    return acquire(options);
  };
  return { lease, calls, singles, again };
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

  it('sends a run that names its owner token through acquireMany, alone too: acquire draws a token of its own', async () => {
    const { lease, calls, singles } = recordingLease();
    const batcher = new ClaimBatcher(lease, Math.random);
    const ownerToken = '6f1c0d3e-8a51-4a39-9f5e-2b7c1d0e4a11';
    expect(await batcher.acquire({ ...run(1), ownerToken })).toMatchObject({ acquired: true, ownerToken });
    expect(calls).toEqual([['jobs.job-1']]);
    expect(singles).toEqual([]);
  });

  it('sends claims again in statements of their own, every one with { again }, by the same senders as the claims at the instant', async () => {
    const { lease, calls, again } = recordingLease();
    const batched = withClaimBatching(lease, () => 0);
    const tokens = Array.from({ length: 30 }, (_, index) => `6f1c0d3e-8a51-4a39-9f5e-${String(index).padStart(12, '0')}`);
    // The first claims won (their answers lost, say); the claims again name the same tokens.
    const runs: JobAcquireManyRun[] = tokens.map((ownerToken, index) => ({ ...run(index), ownerToken }));
    const first = await Promise.all(runs.map((options) => batched.acquire(options)));
    calls.length = 0;
    again.length = 0;
    // In one turn: the claims again, and claims at the instant of other jobs.
    const [retried, fresh] = await Promise.all([
      Promise.all(runs.map((options) => batched.acquireAgain!(options))),
      Promise.all(Array.from({ length: 30 }, (_, index) => batched.acquire(run(100 + index)))),
    ]);
    expect(retried.map((result) => result.acquired && result.id)).toEqual(first.map((result) => result.acquired && result.id));
    expect(fresh.every((result) => result.acquired)).toBe(true);
    // Each statement holds one kind: again exactly where it retries.
    expect(calls.map((codes) => codes.every((code) => Number(code.split('-').pop()) < 100))).toEqual(again);
    expect(again).toContain(true);
    expect(again).toContain(false);
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
