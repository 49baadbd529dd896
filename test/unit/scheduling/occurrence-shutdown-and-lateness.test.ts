import { DeclarationError, type JobExecution } from '../../../src/features';
import { FixedClock, InMemoryJobLease, ManualJobScheduler } from '../../../src/features/testing';
import { occurrenceOfRunKey, occurrenceRunKey } from '../../../src/features/scheduling/occurrence/occurrence-keys';
import { JobScheduleEngine } from '../../../src/features/scheduling/job-schedule-engine';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import type { SchedulerLease } from '../../../src/features/scheduling/scheduler-ports';
import { ManualTimers } from '../../../src/features/scheduling/testing/manual-timers';

describe('a jitter below the late tolerance', () => {
  it('refuses jitterMs at or above lateToleranceMs, naming the job', () => {
    const scheduler = new ManualJobScheduler({ lateToleranceMs: 30_000 });
    const register = (jitterMs: number) => () => scheduler.register({ name: `audit.jitter-${jitterMs}`, every: '1h', jitterMs, run: () => undefined });
    expect(register(30_000)).toThrow(DeclarationError);
    expect(register(30_000)).toThrow(
      'Scheduled job "audit.jitter-30000": jitterMs (30000) must be below the scheduler\'s lateToleranceMs (30000): an instance still waiting its jitter would lose the occurrence to one that judged it missed',
    );
    expect(register(29_999)).not.toThrow();
    expect(() => new ManualJobScheduler().register({ name: 'audit.default', every: '1h', jitterMs: 60_000, run: () => undefined })).toThrow(DeclarationError);
  });
});

describe('stop()', () => {
  it('cancels a run waiting its jitter: it never starts, and its lease is never taken', async () => {
    const clock = new FixedClock(Date.UTC(2026, 0, 1, 0, 0, 30));
    const scheduler = new ManualJobScheduler({ clock, random: () => 0.5 });
    const started: JobExecution[] = [];
    scheduler.register({ name: 'audit.verify-chain', every: '1m', jitterMs: 10_000, run: (e) => void started.push(e) });
    await scheduler.start();
    await scheduler.advance(30_000 + 1_000); // due at 00:01:00, waiting its 5 s jitter
    expect(scheduler.pendingTimers.length).toBeGreaterThan(0);
    await scheduler.stop();
    expect(scheduler.pendingTimers).toEqual([]);
    await scheduler.advance(60_000);
    expect(started).toEqual([]);
    expect(scheduler.runs).toEqual([]);
    expect(scheduler.lease.statusOf('audit.verify-chain', '2026-01-01T00:01:00.000Z')).toBeUndefined();
  });
});

describe('stop() during an acquire', () => {
  it('gives back a lease won after stop(), unrun (JOB_SHUTDOWN)', async () => {
    const clock = new FixedClock(Date.UTC(2026, 0, 1));
    const memory = new InMemoryJobLease(clock);
    const runKeys: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // The acquire reaches the database before stop(); its answer comes after.
    const lease: SchedulerLease = {
      acquire: async (options) => {
        runKeys.push(options.runKey as string);
        const result = await memory.acquire(options);
        await gate;
        return result;
      },
      acquireBatch: (options) => memory.acquireBatch(options),
      heartbeat: (value) => memory.heartbeat(value),
      complete: (value, data) => memory.complete(value, data),
      fail: (value, data) => memory.fail(value, data),
    };
    const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };
    const engine = new JobScheduleEngine({ timers: new ManualTimers(clock), lease, logger: silent });
    const ran: JobExecution[] = [];
    engine.register({ declaration: checkJobDeclaration('audit.verify-chain', { every: '1h' }), handler: (e) => void ran.push(e), enabled: true });
    const asked = engine.runNow('audit.verify-chain');
    await new Promise((resolve) => setImmediate(resolve));
    const stopped = engine.stop();
    open();
    const [record] = await asked;
    await stopped;
    expect(ran).toEqual([]);
    expect(record).toMatchObject({ outcome: 'failed', errorCode: 'JOB_SHUTDOWN' });
    // Released: the FAIL row records the shutdown, nothing ran under it.
    expect(memory.statusOf('audit.verify-chain', runKeys[0])).toBe('FAIL');
  });
});

describe('an instance that stalled', () => {
  it('reports as missed only the occurrences no instance recorded', async () => {
    const clock = new FixedClock(Date.UTC(2026, 0, 1, 0, 0, 30));
    const lease = new InMemoryJobLease(clock);
    const ran: { node: string; at: string }[] = [];
    const [steady, stalled] = ['steady', 'stalled'].map((node) => {
      const scheduler = new ManualJobScheduler({ clock, lease });
      scheduler.register({ name: 'audit.verify-chain', every: '1m', run: (e) => void ran.push({ node, at: e.scheduledAt.toISOString() }) });
      return scheduler;
    });
    await steady.start();
    await stalled.start();
    // 00:01 to 00:04 run on the steady instance while the other one's loop is blocked.
    await steady.advance(4 * 60_000);
    // The stalled instance comes back first for 00:05 (within the tolerance) and runs it.
    clock.set(Date.UTC(2026, 0, 1, 0, 5, 10));
    await stalled.advance(0);
    expect(ran.map((run) => `${run.node} ${run.at.slice(11, 16)}`)).toEqual(['steady 00:01', 'steady 00:02', 'steady 00:03', 'steady 00:04', 'stalled 00:05']);
    expect(stalled.runs.filter((run) => run.outcome === 'missed')).toEqual([]);

    // Now nobody runs 00:06 and 00:07; the stalled instance, back for 00:08, reports those two.
    clock.set(Date.UTC(2026, 0, 1, 0, 8, 5));
    await stalled.advance(0);
    expect(stalled.runs.filter((run) => run.outcome === 'missed').map((run) => run.scheduledAt.toISOString().slice(11, 16))).toEqual(['00:06', '00:07']);
  });
});

describe('occurrence keys', () => {
  it('read back the due instant and the tenant', () => {
    const at = Date.UTC(2026, 2, 29, 1, 0);
    expect(occurrenceOfRunKey(occurrenceRunKey(at))).toEqual({ scheduledAt: at });
    expect(occurrenceOfRunKey(occurrenceRunKey(at, 'acme corp'))).toEqual({ scheduledAt: at, tenantId: 'acme corp' });
    expect(occurrenceOfRunKey('run-now 2026-03-29T01:00:00.000Z 0c0e')).toBeNull();
  });
});

describe('take-over with the in-memory lease', () => {
  it('an instance that died mid-run has its occurrence run again by another, up to maxAttempts owners', async () => {
    const clock = new FixedClock(Date.UTC(2026, 0, 1, 0, 0, 30));
    const lease = new InMemoryJobLease(clock);
    const runs: { node: string; execution: JobExecution }[] = [];
    // Every instance "dies" in the run: it never returns, and its timers (heartbeats) are never advanced again.
    const instance = (node: string) => {
      const scheduler = new ManualJobScheduler({ clock, lease, takeOverScanMs: 5_000 });
      scheduler.register({
        name: 'billing.close-day',
        every: '1h',
        leaseMs: 20_000,
        run: (execution) => {
          runs.push({ node, execution });
          return new Promise<void>(() => undefined);
        },
      });
      return scheduler;
    };
    const first = instance('first');
    await first.start();
    await first.advance(60 * 60_000 - 30_000); // 01:00, runs there and hangs
    const second = instance('second');
    const third = instance('third');
    await second.start();
    await second.advance(30_000); // the lease runs out, the next scan takes it over
    await third.start();
    await third.advance(30_000);
    const fourth = instance('fourth');
    await fourth.start();
    await fourth.advance(30_000);
    expect(runs.map((run) => [run.node, run.execution.trigger])).toEqual([
      ['first', 'schedule'],
      ['second', 'take-over'],
      ['third', 'take-over'],
    ]);
    expect(new Set(runs.map((run) => run.execution.idempotencyKey)).size).toBe(1);
    expect(runs.map((run) => run.execution.fencingToken)).toEqual([1, 2, 3]);
    expect(fourth.runs).toEqual([expect.objectContaining({ outcome: 'abandoned', trigger: 'take-over', errorCode: 'JOB_ABANDONED' })]);
    expect(lease.statusOf('billing.close-day', '2026-01-01T01:00:00.000Z')).toBe('FAIL');
    expect(lease.attemptsOf('billing.close-day', '2026-01-01T01:00:00.000Z')).toBe(3);
  });
});

describe('take-over of a per-tenant occurrence', () => {
  it('runs again only the tenant whose run was abandoned, with its tenantId', async () => {
    const clock = new FixedClock(Date.UTC(2026, 0, 1, 0, 0, 30));
    const lease = new InMemoryJobLease(clock);
    const tenants = { listTenants: () => ['acme', 'globex', 'initech'] };
    const runs: { node: string; tenantId?: string; trigger: string }[] = [];
    const instance = (node: string, hangOn?: string) => {
      const scheduler = new ManualJobScheduler({ clock, lease, tenants, takeOverScanMs: 5_000 });
      scheduler.register({
        name: 'billing.invoice-tenants',
        every: '1h',
        tenancy: 'per-tenant',
        leaseMs: 20_000,
        run: (execution) => {
          runs.push({ node, tenantId: execution.tenantId, trigger: execution.trigger });
          // The first instance dies in globex's run: it never returns, its heartbeats stop with its timers.
          return execution.tenantId === hangOn ? new Promise<void>(() => undefined) : undefined;
        },
      });
      return scheduler;
    };
    const first = instance('first', 'globex');
    await first.start();
    await first.advance(60 * 60_000 - 30_000);
    const second = instance('second');
    await second.start();
    await second.advance(30_000);
    // The first instance fans out to every tenant (tenantConcurrency 4, in an order of its own);
    // the second runs again only globex, whose holder stopped heartbeating.
    const ran = (node: string) => runs.filter((run) => run.node === node);
    expect(
      ran('first')
        .map((run) => `${run.tenantId} ${run.trigger}`)
        .sort(),
    ).toEqual(['acme schedule', 'globex schedule', 'initech schedule']);
    expect(ran('second')).toEqual([{ node: 'second', tenantId: 'globex', trigger: 'take-over' }]);
    expect(lease.statusOf('billing.invoice-tenants', occurrenceRunKey(Date.UTC(2026, 0, 1, 1), 'globex'))).toBe('SUCCESS');
  });
});
