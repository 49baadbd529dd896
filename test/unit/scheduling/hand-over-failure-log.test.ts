import { JobLeaseDatabaseError, type JobLease } from '../../../src/features';
import { systemTimers } from '../../../src/features/job-scheduler/system-timers';
import { withHandOverBatching } from '../../../src/features/scheduling/fleet/hand-over-batcher';
import { HeldClaim } from '../../../src/features/scheduling/occurrence/held-claim';
import { OccurrenceRunner } from '../../../src/features/scheduling/occurrence/occurrence-runner';
import type { SchedulerLease } from '../../../src/features/scheduling/scheduler-ports';

/**
 * The runs of one instant that refuse to start each hand their claim over on their own; the
 * batcher joins them into one statement. When that statement fails, every caller learns it, and
 * the log says so once, with how many occurrences, not once per caller.
 */
it('logs one line for the hand-overs of one failed batched statement, with their count', async () => {
  const statements: JobLease[][] = [];
  const port: SchedulerLease = {
    acquire: async () => ({ acquired: false }),
    acquireBatch: async () => [],
    heartbeat: async () => true,
    complete: async () => true,
    fail: async () => true,
    expireMany: async (leases) => {
      statements.push([...leases]);
      throw new JobLeaseDatabaseError('no pool connection within 5000 ms', { operation: 'fail', retryable: true });
    },
  };
  const lease = withHandOverBatching(port);
  const warnings: string[] = [];
  const runner = new OccurrenceRunner(lease, systemTimers, { log: () => undefined, warn: (line) => void warnings.push(line), error: () => undefined });
  const clock = runner.clock;
  const claims = Array.from(
    { length: 20 },
    (_, index) =>
      new HeldClaim(
        lease,
        clock,
        {
          id: `run-${index}`,
          ownerToken: `token-${index}`,
          idempotencyKey: `v2:key-${index}`,
          fencingToken: index + 1,
          attempt: 1,
          reclaimed: false,
          leaseMs: 60_000,
          heartbeatMs: 20_000,
          heldUntil: clock.now() + 50_000,
        },
        clock.now(),
        `correlation-${index}`,
      ),
  );

  const handed = await Promise.all(claims.map((claim) => runner.claims.handOver([claim])));
  expect(handed).toEqual(claims.map(() => 0));
  expect(statements.map((leases) => leases.length)).toEqual([20]);
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toMatch(
    /^Could not hand over 20 claimed occurrence\(s\); they are taken over once their lease runs out: .*no pool connection within 5000 ms/,
  );
  expect(warnings[0]).not.toContain('token-');
});
