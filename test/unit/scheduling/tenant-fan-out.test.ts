import { JobLeaseDatabaseError, JobSchedulerStatus, JobTenantInvalidError, type JobRunRecord } from '../../../src/features';
import { FixedClock, InMemoryJobLease, ManualJobScheduler } from '../../../src/features/testing';
import { occurrenceRunKey } from '../../../src/features/scheduling/occurrence/occurrence-keys';
import { leaseLosingFirstClaimAnswer } from '../../support/lost-claim-answer';

const MINUTE = 60_000;
const tenantsNamed = (count: number) => Array.from({ length: count }, (_, index) => `t${String(index).padStart(2, '0')}`);

/** Handlers that wait until the test lets them return, counting how many run at once. */
class Gates {
  running = 0;
  peak = 0;
  readonly ran: string[] = [];
  private readonly waiting: Array<() => void> = [];

  handler = async ({ tenantId }: { tenantId?: string }): Promise<void> => {
    this.running++;
    this.peak = Math.max(this.peak, this.running);
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running--;
    this.ran.push(tenantId as string);
  };

  get open(): number {
    return this.waiting.length;
  }

  releaseOne(): void {
    this.waiting.shift()?.();
  }
}

/** Lets promise callbacks and immediates run (without waiting for held lease calls). */
const turns = async (): Promise<void> => {
  for (let turn = 0; turn < 20; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
};

const outcomesByTenant = (records: readonly JobRunRecord[]) => Object.fromEntries(records.map((record) => [record.tenantId, record.outcome]));

describe('per-tenant fan-out (in-memory lease)', () => {
  it('runs at most tenantConcurrency tenants at once per instance, each tenant exactly once across instances', async () => {
    const clock = new FixedClock(0);
    const lease = new InMemoryJobLease(clock);
    const tenants = tenantsNamed(20);
    const gates = [new Gates(), new Gates()];
    // Two instances walking the tenants from different offsets (0 and the middle).
    const schedulers = [0, 0.5].map((offset) => new ManualJobScheduler({ clock, lease, tenants: { listTenants: () => tenants }, random: () => offset }));
    for (const [index, scheduler] of schedulers.entries()) {
      scheduler.register({ name: 'billing.invoice', every: '1m', tenancy: 'per-tenant', tenantConcurrency: 3, run: gates[index].handler });
      await scheduler.start();
    }
    await schedulers[0].advance(MINUTE);
    await schedulers[1].advance(0);
    expect(gates.map((gate) => gate.running)).toEqual([3, 3]);
    while (gates.some((gate) => gate.open > 0)) {
      for (const gate of gates) gate.releaseOne();
      await schedulers[0].advance(0);
      await schedulers[1].advance(0);
      for (const gate of gates) expect(gate.running).toBeLessThanOrEqual(3);
    }
    expect(gates.map((gate) => gate.peak)).toEqual([3, 3]);
    expect([...gates[0].ran, ...gates[1].ran].sort()).toEqual(tenants);
    // Each instance started on its own stretch of the list.
    expect(gates[0].ran[0]).toBe('t00');
    expect(gates[1].ran[0]).toBe('t10');
    const [a, b] = schedulers.map((scheduler) => outcomesByTenant(scheduler.runs));
    for (const tenant of tenants) expect([a[tenant], b[tenant]].sort()).toEqual(['skipped-locked', 'succeeded']);
  });

  it('frees a slot when its handler returns: the next tenant starts while the lease of the one before is still being completed', async () => {
    const clock = new FixedClock(0);
    const lease = new InMemoryJobLease(clock);
    const held: Array<() => void> = [];
    const complete = lease.complete.bind(lease);
    // Every complete waits until the test lets it through.
    lease.complete = (value, data) => new Promise<void>((resolve) => held.push(resolve)).then(() => complete(value, data));
    const gates = new Gates();
    const scheduler = new ManualJobScheduler({ clock, lease, tenants: { listTenants: () => tenantsNamed(3) }, random: () => 0 });
    scheduler.register({ name: 'billing.invoice', every: '1m', tenancy: 'per-tenant', tenantConcurrency: 1, run: gates.handler });
    await scheduler.start();
    await scheduler.advance(MINUTE);
    expect(gates.running).toBe(1);
    gates.releaseOne(); // t00 returns; its complete is held (advance() would wait for it: flush instead)
    await turns();
    expect(held).toHaveLength(1);
    expect(gates.running).toBe(1); // t01 runs meanwhile, one at a time still
    expect(gates.peak).toBe(1);
    expect(scheduler.runs).toEqual([]); // t00 is recorded once its complete applied
    held.shift()?.();
    await turns();
    expect(scheduler.runs.map((run) => [run.tenantId, run.outcome])).toEqual([['t00', 'succeeded']]);
    while (gates.open > 0 || held.length > 0) {
      gates.releaseOne();
      held.shift()?.();
      await turns();
    }
    expect(outcomesByTenant(scheduler.runs)).toEqual({ t00: 'succeeded', t01: 'succeeded', t02: 'succeeded' });
    expect(gates.peak).toBe(1);
  });

  it('claims ahead in batches when runs are short, one slot at a time when they are long against the lease', async () => {
    const batchSizes = async (runMs: number, count: number): Promise<number[]> => {
      const clock = new FixedClock(0);
      const lease = new InMemoryJobLease(clock);
      const claims: number[] = [];
      const claim = lease.acquireMany.bind(lease);
      lease.acquireMany = (runs, options) => {
        claims.push(runs.length);
        return claim(runs, options);
      };
      const tenants = tenantsNamed(count);
      const scheduler = new ManualJobScheduler({ clock, lease, tenants: { listTenants: () => tenants }, random: () => 0 });
      scheduler.register({
        name: 'billing.invoice',
        every: '1h',
        leaseMs: 10_000,
        tenancy: 'per-tenant',
        tenantConcurrency: 2,
        run: () => clock.set(clock.now() + runMs),
      });
      await scheduler.start();
      await scheduler.advance(60 * MINUTE);
      expect(scheduler.runs.filter((run) => run.outcome === 'succeeded')).toHaveLength(count);
      return claims;
    };
    // The first claim fills the idle slots; once a run is measured, claims run ahead (at most a
    // quarter of the walk left, so that other instances share the tail).
    const short = await batchSizes(0, 200);
    expect(short[0]).toBe(2);
    expect(short[1]).toBe(50);
    expect(short.length).toBeLessThan(200 / 4);
    expect(short.reduce((sum, size) => sum + size, 0)).toBe(200);
    // 4 s runs on a 10 s lease: a waiting claim would outlast a quarter of the lease.
    const long = await batchSizes(4_000, 30);
    expect(long.every((size) => size <= 2)).toBe(true);
    expect(long.reduce((sum, size) => sum + size, 0)).toBe(30);
  });

  it('holds a claimed lease from the claim and proves it again before starting a tenant whose deadline passed; one taken over meanwhile does not run here', async () => {
    const clock = new FixedClock(0);
    const lease = new InMemoryJobLease(clock);
    const tenants = tenantsNamed(4);
    const heartbeats: string[] = [];
    const heartbeat = lease.heartbeat.bind(lease);
    lease.heartbeat = (held) => {
      heartbeats.push(held.id);
      return heartbeat(held);
    };
    const ran: string[] = [];
    const scheduler = new ManualJobScheduler({ clock, lease, tenants: { listTenants: () => tenants }, random: () => 0 });
    scheduler.register({
      name: 'billing.invoice',
      every: '1h',
      leaseMs: 10_000,
      tenancy: 'per-tenant',
      tenantConcurrency: 1,
      run: ({ tenantId }) => {
        ran.push(tenantId as string);
        // t00 is quick, so the next tenant is claimed ahead as each one starts; t01 takes 3 s, so
        // t02, claimed as t01 started, waited 3 s: within its lease's deadline, so no statement.
        if (tenantId === 't01') clock.set(clock.now() + 3_000);
      },
    });
    await scheduler.start();
    await scheduler.advance(60 * MINUTE);
    expect(ran).toEqual(tenants);
    expect(heartbeats).toHaveLength(0);

    // Same again, but t01 runs past the lease and another instance takes t02 over (and t03 first).
    ran.length = 0;
    const late = new ManualJobScheduler({ clock, lease, tenants: { listTenants: () => tenants }, random: () => 0 });
    late.register({
      name: 'billing.settle',
      every: '1h',
      leaseMs: 10_000,
      tenancy: 'per-tenant',
      tenantConcurrency: 1,
      run: async ({ tenantId }) => {
        ran.push(tenantId as string);
        if (tenantId !== 't01') return;
        clock.set(clock.now() + 11_000);
        const runKeys = ['t02', 't03'].map((id) => occurrenceRunKey(60 * MINUTE * 2, id));
        const taken = await lease.acquireBatch({ code: 'billing.settle', runKeys, leaseMs: 10_000, reclaimFailed: false });
        expect(taken.map((result) => result.acquired && result.reclaimed)).toEqual([true, false]);
      },
    });
    await late.start();
    await late.advance(60 * MINUTE);
    expect(ran).toEqual(['t00', 't01']);
    // In tenant order: t01's slot was free (and t02 tried) before t01's lease was completed. t02's
    // deadline had passed: one fenced heartbeat found it another owner's, so it did not start here.
    const byTenant = [...late.runs].sort((a, b) => String(a.tenantId).localeCompare(String(b.tenantId)));
    expect(byTenant.map((run) => [run.tenantId, run.outcome, run.errorCode])).toEqual([
      ['t00', 'succeeded', undefined],
      ['t01', 'succeeded', undefined],
      ['t02', 'skipped-locked', undefined],
      ['t03', 'skipped-locked', undefined],
    ]);
    expect(heartbeats).toHaveLength(1);
  });

  it('records invalid tenant ids failed with JOB_TENANT_INVALID naming them, runs the rest, and never merges distinct ids', async () => {
    const clock = new FixedClock(0);
    const listed: unknown[] = ['acme', 'acme\t', ' acme', 42, 'bad\u0000id', 'x'.repeat(1_000), 'acme'];
    const scheduler = new ManualJobScheduler({ clock, tenants: { listTenants: () => listed as string[] }, random: () => 0 });
    const ran: string[] = [];
    scheduler.register({ name: 'billing.invoice', every: '1m', tenancy: 'per-tenant', run: ({ tenantId }) => void ran.push(tenantId as string) });
    await scheduler.start();
    await scheduler.advance(MINUTE);
    expect(ran.sort()).toEqual([' acme', 'acme', 'acme\t']);
    const failed = scheduler.runs.filter((run) => run.outcome === 'failed');
    expect(failed.map((run) => run.errorCode)).toEqual(['JOB_TENANT_INVALID', 'JOB_TENANT_INVALID', 'JOB_TENANT_INVALID']);
    for (const run of failed) expect(run.error).toBeInstanceOf(JobTenantInvalidError);
    expect(failed.map((run) => (run.error as Error).message)).toEqual([
      'Scheduled job "billing.invoice" cannot run for the tenant number 42: a tenant id must be a string',
      'Scheduled job "billing.invoice" cannot run for the tenant "bad\\u0000id": it contains a NUL character or a lone surrogate, which PostgreSQL text cannot store',
      `Scheduled job "billing.invoice" cannot run for the tenant "${'x'.repeat(80)}…" (1000 characters): encoded for the lease key it takes 1000 characters, more than the 947 a key holds`,
    ]);
    expect(failed.map((run) => run.tenantId)).toEqual([undefined, 'bad\u0000id', 'x'.repeat(1_000)]);
    expect(scheduler.lease.statusOf('billing.invoice', occurrenceRunKey(MINUTE, 'acme\t'))).toBe(JobSchedulerStatus.SUCCESS);
  });

  it('reports occurrences missed before a per-tenant catch-up once, from the instance that ran the first tenant', async () => {
    const clock = new FixedClock(0);
    const lease = new InMemoryJobLease(clock);
    const tenants = tenantsNamed(10);
    const job = { name: 'billing.invoice', every: '1m', tenancy: 'per-tenant', tenantConcurrency: 2, missed: 'run-once' } as const;
    const first = new ManualJobScheduler({ clock, lease, tenants: { listTenants: () => tenants } });
    first.register({ ...job, run: () => undefined });
    await first.start();
    await first.advance(MINUTE);
    await first.stop();
    // Every instance down for four minutes; two come back, each walking from its own offset.
    clock.set(5 * MINUTE + 30_000);
    const gates = new Gates();
    const schedulers = [0, 0.5].map((offset) => new ManualJobScheduler({ clock, lease, tenants: { listTenants: () => tenants }, random: () => offset }));
    for (const scheduler of schedulers) scheduler.register({ ...job, run: gates.handler });
    await Promise.all(schedulers.map((scheduler) => scheduler.start()));
    for (const scheduler of schedulers) await scheduler.advance(0);
    expect(gates.running).toBe(4);
    while (gates.open > 0) {
      gates.releaseOne();
      for (const scheduler of schedulers) await scheduler.advance(0);
    }
    expect(gates.ran.sort()).toEqual(tenants);
    const missed = schedulers.map((scheduler) => scheduler.runs.filter((run) => run.outcome === 'missed').length);
    expect(missed.sort()).toEqual([0, 3]);
  });

  it('on stop, starts nothing more and hands the tenants claimed but not started over: another instance takes each over', async () => {
    const clock = new FixedClock(0);
    const tenants = tenantsNamed(20);
    const gates = new Gates();
    const scheduler = new ManualJobScheduler({ clock, tenants: { listTenants: () => tenants }, random: () => 0 });
    scheduler.register({ name: 'billing.invoice', every: '1h', tenancy: 'per-tenant', tenantConcurrency: 1, run: gates.handler });
    await scheduler.start();
    await scheduler.advance(60 * MINUTE);
    gates.releaseOne(); // t00 returns; t01..t05 are claimed (a quarter of the 19 left), t01 starts
    await scheduler.advance(0);
    expect(gates.running).toBe(1);
    const stopped = scheduler.stop();
    gates.releaseOne(); // t01 returns within the grace
    await stopped;
    await scheduler.advance(0);
    expect(gates.ran).toEqual(['t00', 't01']);
    expect(scheduler.runs.map((run) => [run.tenantId, run.outcome, run.errorCode])).toEqual([
      ['t00', 'succeeded', undefined],
      ['t01', 'succeeded', undefined],
    ]);
    const handedOver = ['t02', 't03', 't04', 't05'];
    for (const tenant of handedOver) {
      expect(scheduler.lease.statusOf('billing.invoice', occurrenceRunKey(60 * MINUTE, tenant))).toBe(JobSchedulerStatus.RUNNING);
    }
    // Tenants never claimed are left to other instances: no row, no record here.
    expect(scheduler.lease.statusOf('billing.invoice', occurrenceRunKey(60 * MINUTE, 't06'))).toBeUndefined();

    // Another instance's take-over scan runs each handed-over tenant, once.
    const other = new ManualJobScheduler({ clock, lease: scheduler.lease, tenants: { listTenants: () => [] }, random: () => 0 });
    const tookOver: string[] = [];
    other.register({ name: 'billing.invoice', every: '1h', tenancy: 'per-tenant', run: ({ tenantId }) => void tookOver.push(tenantId as string) });
    await other.start();
    await other.advance(31_000);
    expect(tookOver.sort()).toEqual(handedOver);
    expect(other.runs.every((run) => run.trigger === 'take-over' && run.outcome === 'succeeded')).toBe(true);
    await other.stop();
  });
});

describe('a tenant claim whose answer is lost (in-memory lease)', () => {
  /**
   * One instance, 4 tenants, all in the first claim (tenantConcurrency 4). `fails` decides what the
   * first acquireMany does after it has claimed (committed) its tenants: its answer never comes.
   */
  const setUp = (fails: JobLeaseDatabaseError) => {
    const { clock, lease, calls } = leaseLosingFirstClaimAnswer(fails);
    const tenants = tenantsNamed(4);
    const ran: string[] = [];
    const scheduler = new ManualJobScheduler({ clock, lease, tenants: { listTenants: () => tenants }, random: () => 0 });
    scheduler.register({
      name: 'billing.invoice',
      every: '1h',
      tenancy: 'per-tenant',
      tenantConcurrency: 4,
      run: ({ tenantId }) => void ran.push(tenantId as string),
    });
    const rowsOf = () => tenants.map((tenantId) => lease.statusOf('billing.invoice', occurrenceRunKey(60 * MINUTE, tenantId)));
    return { scheduler, calls, ran, tenants, rowsOf };
  };
  const lost = () => new JobLeaseDatabaseError('Connection terminated unexpectedly', { operation: 'acquire', retryable: true });

  it('is sent again 250 ms later under the same owner tokens: each tenant it won runs once, on time', async () => {
    const { scheduler, calls, ran, tenants, rowsOf } = setUp(lost());
    await scheduler.start();
    await scheduler.advance(60 * MINUTE);
    expect(ran).toEqual([]);
    await scheduler.advance(250);
    expect(calls).toEqual([
      { runs: 4, again: false },
      { runs: 4, again: true },
    ]);
    expect(ran.sort()).toEqual(tenants);
    expect(outcomesByTenant(scheduler.runs)).toEqual(Object.fromEntries(tenants.map((tenantId) => [tenantId, 'succeeded'])));
    expect(rowsOf()).toEqual(tenants.map(() => JobSchedulerStatus.SUCCESS));
    await scheduler.stop();
  });

  it('is not sent again for an error no retry fixes: its tenants are recorded unavailable, their rows left to the take-over', async () => {
    const { scheduler, calls, ran, tenants, rowsOf } = setUp(
      new JobLeaseDatabaseError('permission denied', { operation: 'acquire', sqlState: '42501', retryable: false }),
    );
    await scheduler.start();
    await scheduler.advance(60 * MINUTE + 1_000);
    expect(calls).toEqual([{ runs: 4, again: false }]);
    expect(ran).toEqual([]);
    expect(scheduler.runs.map((record) => record.errorCode)).toEqual(tenants.map(() => 'JOB_LEASE_UNAVAILABLE'));
    expect(rowsOf()).toEqual(tenants.map(() => JobSchedulerStatus.RUNNING));
    await scheduler.stop();
  });

  it('is not sent again once the instance stops during the pause, and the stop does not wait for the pause', async () => {
    const { scheduler, calls, ran, tenants } = setUp(lost());
    await scheduler.start();
    await scheduler.advance(60 * MINUTE);
    // The clock stays where it is: only stop() can end the pause.
    await scheduler.stop();
    expect(calls).toEqual([{ runs: 4, again: false }]);
    expect(ran).toEqual([]);
    expect(scheduler.runs.map((record) => record.errorCode)).toEqual(tenants.map(() => 'JOB_LEASE_UNAVAILABLE'));
  });
});
