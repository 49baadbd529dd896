import type { JobLease } from '../../../src/features';
import { systemTimers } from '../../../src/features/job-scheduler/system-timers';
import { HeldClaim } from '../../../src/features/scheduling/occurrence/held-claim';
import { OccurrenceRunner } from '../../../src/features/scheduling/occurrence/occurrence-runner';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import type { SchedulerLease } from '../../../src/features/scheduling/scheduler-ports';

/**
 * A claim whose lease is no longer proven by its deadline (its holder stalled) is proven by one
 * fenced heartbeat before its handler may start. When the scheduler begins to stop while that
 * heartbeat is out, the claim must not start once the heartbeat says "held": it is handed over,
 * and the stop waits for the proof and the hand-over (the pool closes after it).
 */
it('hands over, never starts, a claim whose proof was out when the stop began; the stop waits for both', async () => {
  const events: string[] = [];
  let answer: (held: boolean) => void = () => undefined;
  const port: SchedulerLease = {
    acquire: async () => ({ acquired: false }),
    acquireBatch: async () => [],
    heartbeat: () => {
      events.push('heartbeat sent');
      return new Promise<boolean>((resolve) => (answer = resolve));
    },
    complete: async () => true,
    fail: async () => true,
    expireMany: async (leases: readonly JobLease[]) => {
      events.push(`handed over ${leases.map((lease) => lease.id).join(',')}`);
      return leases.map(() => true);
    },
  };
  const runner = new OccurrenceRunner(port, systemTimers, { log: () => undefined, warn: () => undefined, error: () => undefined });
  const clock = runner.clock;
  const leaseMs = 60_000;
  // Claimed two leases ago: its deadline has passed, so only a heartbeat can prove it.
  const sentAt = clock.now() - 2 * leaseMs;
  const claim = new HeldClaim(
    port,
    clock,
    {
      id: 'run-1',
      ownerToken: 'owner-1',
      idempotencyKey: 'v2:key-1',
      fencingToken: 1,
      attempt: 1,
      reclaimed: true,
      leaseMs,
      heartbeatMs: 20_000,
      heldUntil: sentAt,
    },
    sentAt,
    'correlation-1',
  );
  expect(claim.hold.proven).toBe(false);

  const ran: string[] = [];
  const run = runner.run({
    job: checkJobDeclaration('reports.nightly', { every: '10s', leaseMs }),
    handler: () => void ran.push('handler'),
    scheduledAt: Date.now(),
    trigger: 'take-over',
    claim,
  });
  await new Promise((resolve) => setImmediate(resolve));
  expect(events).toEqual(['heartbeat sent']);

  // The scheduler's stop(): closed, then shutdown.
  runner.closed = true;
  let stopped = false;
  const stopping = runner.shutdown(1_000).then(() => (stopped = true));
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(stopped).toBe(false);

  answer(true);
  const record = await run;
  await stopping;
  expect(ran).toEqual([]);
  expect(record).toMatchObject({ outcome: 'failed', errorCode: 'JOB_SHUTDOWN' });
  expect(events).toEqual(['heartbeat sent', 'handed over run-1']);
});
