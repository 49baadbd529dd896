import { FixedClock, InMemoryJobLease, ManualJobScheduler, ManualTimers } from '../../../src/features/testing';
import { PeriodicTask } from '../../../src/features/scheduling/timers/periodic-task';
import type { JobExecution } from '../../../src/features';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('ManualJobScheduler', () => {
  it('runs each occurrence on one instance only (the guide example)', async () => {
    const clock = new FixedClock(new Date('2026-03-02T05:58:00Z'));
    const lease = new InMemoryJobLease(clock);
    const instances = [1, 2].map(() => new ManualJobScheduler({ clock, lease }));
    const ran: Date[] = [];
    for (const scheduler of instances) {
      scheduler.register({
        name: 'notifications.send-reminders',
        cron: '0 7 * * *',
        timeZone: 'Europe/Paris',
        run: async (execution) => {
          ran.push(execution.scheduledAt);
        },
      });
      await scheduler.start();
    }
    const [first, second] = instances;
    await first.advance(2 * 60_000);
    await second.advance(0);
    expect(ran).toEqual([new Date('2026-03-02T06:00:00Z')]);
    expect(first.runs.map((run) => run.outcome)).toEqual(['succeeded']);
    expect(second.runs.map((run) => run.outcome)).toEqual(['skipped-locked']);
  });

  it('fires an epoch-aligned interval at :00 :15 :30 :45 whatever the start time', async () => {
    const scheduler = new ManualJobScheduler({ clock: new FixedClock(new Date('2026-03-02T05:58:13.456Z')) });
    const due: string[] = [];
    scheduler.register({ name: 'billing.export', every: '15m', run: (e) => void due.push(e.scheduledAt.toISOString()) });
    await scheduler.start();
    await scheduler.advance(60 * 60_000);
    expect(due).toEqual(['2026-03-02T06:00:00.000Z', '2026-03-02T06:15:00.000Z', '2026-03-02T06:30:00.000Z', '2026-03-02T06:45:00.000Z']);
  });

  it('hands the run its due instant, its start, a signal, a key and a fencing token', async () => {
    const scheduler = new ManualJobScheduler({ clock: new FixedClock(Date.UTC(2026, 0, 1, 0, 0, 30)), random: () => 0.5 });
    const executions: JobExecution[] = [];
    scheduler.register({ name: 'audit.verify-chain', every: '1m', jitterMs: 10_000, run: (e) => void executions.push(e) });
    await scheduler.start();
    await scheduler.advance(60_000);
    const [execution] = executions;
    expect(execution.scheduledAt.toISOString()).toBe('2026-01-01T00:01:00.000Z');
    expect(execution.startedAt.toISOString()).toBe('2026-01-01T00:01:05.000Z');
    expect(execution).toMatchObject({ name: 'audit.verify-chain', fencingToken: 1, trigger: 'schedule', tenantId: undefined });
    expect(execution.idempotencyKey).toMatch(/^v2:/);
    expect(execution.signal.aborted).toBe(false);
    expect(execution.correlationId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('skips an occurrence that comes while the previous run goes on', async () => {
    const scheduler = new ManualJobScheduler({ clock: new FixedClock(0) });
    const release = deferred();
    scheduler.register({ name: 'reports.build', every: '1m', run: () => release.promise });
    await scheduler.start();
    await scheduler.advance(3 * 60_000);
    release.resolve();
    await scheduler.advance(0);
    expect(scheduler.runs.map((run) => run.outcome)).toEqual(['skipped-overlap', 'skipped-overlap', 'succeeded']);
  });

  it("queues one occurrence at most behind the running one with overlap: 'queue'", async () => {
    const scheduler = new ManualJobScheduler({ clock: new FixedClock(0) });
    const release = deferred();
    const started: number[] = [];
    scheduler.register({
      name: 'reports.build',
      every: '1m',
      overlap: 'queue',
      run: async (e) => {
        started.push(e.scheduledAt.getTime());
        if (started.length === 1) await release.promise;
      },
    });
    await scheduler.start();
    await scheduler.advance(3 * 60_000);
    expect(started).toEqual([60_000]);
    release.resolve();
    await scheduler.advance(0);
    expect(started).toEqual([60_000, 120_000]);
    expect(scheduler.runs.map((run) => run.outcome)).toEqual(['skipped-overlap', 'succeeded', 'succeeded']);
  });

  it('aborts the signal past timeoutMs, records JOB_TIMEOUT and frees the slot', async () => {
    const scheduler = new ManualJobScheduler({ clock: new FixedClock(0) });
    const never = deferred();
    let aborted: unknown;
    scheduler.register({
      name: 'ledger.export',
      every: '1m',
      timeoutMs: 10_000,
      run: async ({ signal }) => {
        signal.addEventListener('abort', () => (aborted = signal.reason));
        await never.promise;
      },
    });
    await scheduler.start();
    await scheduler.advance(60_000 + 10_000);
    expect(aborted).toMatchObject({ code: 'JOB_TIMEOUT' });
    expect(scheduler.runs).toEqual([expect.objectContaining({ outcome: 'failed', errorCode: 'JOB_TIMEOUT' })]);
    await scheduler.advance(50_000);
    // The slot was freed: the next occurrence runs (and overlaps the one that ignores its signal).
    expect(scheduler.runs.map((run) => run.outcome)).toEqual(['failed']);
    expect(scheduler.lease.statusOf('ledger.export', new Date(60_000).toISOString())).toBe('FAIL');
    await scheduler.advance(20_000);
    expect(scheduler.runs.map((run) => run.errorCode)).toEqual(['JOB_TIMEOUT', 'JOB_TIMEOUT']);
  });

  it('records a throwing job as failed and goes on with the next occurrence', async () => {
    const scheduler = new ManualJobScheduler({ clock: new FixedClock(0) });
    let calls = 0;
    scheduler.register({
      name: 'sync.orders',
      every: '1m',
      run: () => {
        calls++;
        if (calls === 1) throw new Error('ERP down');
      },
    });
    await scheduler.start();
    await scheduler.advance(2 * 60_000);
    expect(scheduler.runs.map((run) => [run.outcome, run.errorCode])).toEqual([
      ['failed', 'JOB_FAILED'],
      ['succeeded', undefined],
    ]);
  });

  it('never retries a failed occurrence on another instance', async () => {
    const clock = new FixedClock(0);
    const lease = new InMemoryJobLease(clock);
    const a = new ManualJobScheduler({ clock, lease });
    const b = new ManualJobScheduler({ clock, lease });
    for (const scheduler of [a, b]) {
      scheduler.register({ name: 'sync.orders', every: '1m', run: () => Promise.reject(new Error('boom')) });
      await scheduler.start();
    }
    await a.advance(60_000);
    await b.advance(0);
    expect(a.runs.map((run) => run.outcome)).toEqual(['failed']);
    expect(b.runs.map((run) => run.outcome)).toEqual(['skipped-locked']);
  });

  it('drops occurrences reached later than the tolerance, or runs the latest once', async () => {
    const clock = new FixedClock(0);
    const dropping = new ManualJobScheduler({ clock, lease: new InMemoryJobLease(clock) });
    const catching = new ManualJobScheduler({ clock, lease: new InMemoryJobLease(clock) });
    const caught: number[] = [];
    dropping.register({ name: 'a.drop', every: '5m', run: () => undefined });
    catching.register({ name: 'a.catch', every: '5m', missed: 'run-once', run: (e) => void caught.push(e.scheduledAt.getTime()) });
    await dropping.start();
    await catching.start();
    // The event loop was blocked until 27:00: 05:00 ... 25:00 passed, the latest 2 minutes ago.
    clock.set(27 * 60_000);
    await dropping.advance(0);
    await catching.advance(0);
    expect(dropping.runs.map((run) => run.outcome)).toEqual(['missed', 'missed', 'missed', 'missed', 'missed']);
    expect(caught).toEqual([25 * 60_000]);
    expect(catching.runs.map((run) => run.outcome)).toEqual(['succeeded', 'missed', 'missed', 'missed', 'missed']);
    expect(catching.runs[0]).toMatchObject({ trigger: 'catch-up' });
    // Neither fires those instants again.
    await dropping.advance(3 * 60_000);
    expect(dropping.runs.map((run) => run.scheduledAt.getTime() / 60_000)).toEqual([5, 10, 15, 20, 25, 30]);
  });

  it('runs the latest of several passed occurrences when it is still within the tolerance', async () => {
    const clock = new FixedClock(0);
    const scheduler = new ManualJobScheduler({ clock });
    scheduler.register({ name: 'a.tick', every: '1m', run: () => undefined });
    await scheduler.start();
    clock.set(5 * 60_000 + 30_000);
    await scheduler.advance(0);
    expect(scheduler.runs.map((run) => [run.outcome, run.scheduledAt.getTime() / 60_000])).toEqual([
      ['succeeded', 5],
      ['missed', 1],
      ['missed', 2],
      ['missed', 3],
      ['missed', 4],
    ]);
  });

  it('after a restart, reports what passed since the latest recorded occurrence; nothing on first deploy', async () => {
    const clock = new FixedClock(Date.UTC(2026, 0, 1, 6, 59));
    const lease = new InMemoryJobLease(clock);
    const declare = (scheduler: ManualJobScheduler) => scheduler.register({ name: 'notifications.digest', cron: '0 * * * *', run: () => undefined });
    const first = new ManualJobScheduler({ clock, lease });
    declare(first);
    await first.start();
    expect(first.runs).toEqual([]);
    await first.advance(60_000);
    await first.stop();
    // Down from 07:00 to 10:30: 08:00, 09:00 and 10:00 were missed.
    clock.set(Date.UTC(2026, 0, 1, 10, 30));
    const second = new ManualJobScheduler({ clock, lease });
    const third = new ManualJobScheduler({ clock, lease });
    declare(second);
    declare(third);
    await second.start();
    await third.start();
    expect(second.runs.map((run) => [run.outcome, run.scheduledAt.toISOString()])).toEqual([
      ['missed', '2026-01-01T08:00:00.000Z'],
      ['missed', '2026-01-01T09:00:00.000Z'],
      ['missed', '2026-01-01T10:00:00.000Z'],
    ]);
    expect(third.runs).toEqual([]);
    expect(lease.statusOf('notifications.digest', '2026-01-01T10:00:00.000Z')).toBe('FAIL');
  });

  it('does not hold start() for a catch-up run', async () => {
    const clock = new FixedClock(Date.UTC(2026, 0, 1, 6, 0));
    const lease = new InMemoryJobLease(clock);
    const never = deferred();
    const declare = (scheduler: ManualJobScheduler) =>
      scheduler.register({ name: 'reports.catch-up', cron: '0 * * * *', missed: 'run-once', run: () => never.promise });
    await lease.acquire({ code: 'reports.catch-up', runKey: '2026-01-01T06:00:00.000Z' });
    clock.set(Date.UTC(2026, 0, 1, 9, 30));
    const scheduler = new ManualJobScheduler({ clock, lease });
    declare(scheduler);
    await scheduler.start();
    expect(scheduler.runs).toEqual([]);
    never.resolve();
    await scheduler.advance(0);
    expect(scheduler.runs.map((run) => [run.outcome, run.trigger, run.scheduledAt.toISOString()])).toEqual([
      ['succeeded', 'catch-up', '2026-01-01T09:00:00.000Z'],
      ['missed', 'schedule', '2026-01-01T07:00:00.000Z'],
      ['missed', 'schedule', '2026-01-01T08:00:00.000Z'],
    ]);
  });

  it('runs a per-tenant job once per tenant; one failing does not stop the others', async () => {
    const clock = new FixedClock(0);
    const lease = new InMemoryJobLease(clock);
    const tenants = { listTenants: () => ['acme', 'globex', 'initech'] };
    // random 0: both instances walk the tenants from the first one (each from its own random offset otherwise).
    const a = new ManualJobScheduler({ clock, lease, tenants, random: () => 0 });
    const b = new ManualJobScheduler({ clock, lease, tenants, random: () => 0 });
    const ran: string[] = [];
    for (const scheduler of [a, b]) {
      scheduler.register({
        name: 'billing.invoice',
        every: '1m',
        tenancy: 'per-tenant',
        run: ({ tenantId }) => {
          if (tenantId === 'globex') throw new Error('globex is broken');
          ran.push(tenantId as string);
        },
      });
      await scheduler.start();
    }
    await a.advance(60_000);
    await b.advance(0);
    expect(ran).toEqual(['acme', 'initech']);
    expect(a.runs.map((run) => [run.tenantId, run.outcome])).toEqual([
      ['acme', 'succeeded'],
      ['globex', 'failed'],
      ['initech', 'succeeded'],
    ]);
    expect(b.runs.map((run) => run.outcome)).toEqual(['skipped-locked', 'skipped-locked', 'skipped-locked']);
  });

  it('runNow runs with scheduledAt = the instant asked, and refuses an unknown job', async () => {
    const scheduler = new ManualJobScheduler({ clock: new FixedClock(Date.UTC(2026, 0, 10, 9, 0, 7)) });
    const seen: JobExecution[] = [];
    scheduler.register({ name: 'notification.send-due-reminders', every: '15m', run: (e) => void seen.push(e) });
    const [first] = await scheduler.runNow('notification.send-due-reminders');
    const [second] = await scheduler.runNow('notification.send-due-reminders');
    expect([first.outcome, second.outcome]).toEqual(['succeeded', 'succeeded']);
    expect(seen.map((e) => [e.scheduledAt.toISOString(), e.trigger])).toEqual([
      ['2026-01-10T09:00:07.000Z', 'run-now'],
      ['2026-01-10T09:00:07.000Z', 'run-now'],
    ]);
    await expect(scheduler.runNow('nobody.declared-this')).rejects.toMatchObject({ code: 'UNKNOWN_JOB' });
  });

  it('registers a disabled job without timers', async () => {
    const scheduler = new ManualJobScheduler({ clock: new FixedClock(0) });
    scheduler.register({ name: 'a.off', every: '1m', enabled: false, run: () => undefined });
    await scheduler.start();
    expect(scheduler.pendingTimers).toEqual([]);
    await scheduler.advance(10 * 60_000);
    expect(scheduler.runs).toEqual([]);
    expect((await scheduler.runNow('a.off'))[0].outcome).toBe('succeeded');
  });

  it('advances years of a leap-day job in well under a second, the take-over scan keeping its rhythm', async () => {
    const start = Date.parse('2027-01-01T00:00:00Z');
    const scheduler = new ManualJobScheduler({ clock: new FixedClock(start) });
    const due: string[] = [];
    scheduler.register({ name: 'calendar.leap-day', cron: '0 0 29 2 *', run: (e) => void due.push(e.scheduledAt.toISOString()) });
    await scheduler.start();
    const timed = async (ms: number): Promise<number> => {
      const started = performance.now();
      await scheduler.advance(ms);
      return performance.now() - started;
    };
    const fifteenMonths = await timed(Date.parse('2028-04-01T00:00:00Z') - start);
    expect(due).toEqual(['2028-02-29T00:00:00.000Z']);
    const fourYears = await timed(4 * 365 * 86_400_000);
    expect(due).toEqual(['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z']);
    expect(scheduler.runs.map((run) => run.outcome)).toEqual(['succeeded', 'succeeded']);
    process.stdout.write(`advance: 15 months in ${Math.round(fifteenMonths)} ms, 4 more years in ${Math.round(fourYears)} ms\n`);
    // Under a second on an idle machine; the bound leaves room for a loaded one.
    expect(fifteenMonths + fourYears).toBeLessThan(5_000);
    // The scan (every 30 s from the start) is still armed on its rhythm, past the last instant.
    const scan = scheduler.pendingTimers.filter((at) => (at - start) % 30_000 === 0 && at !== Date.parse('2036-02-29T00:00:00Z'));
    expect(scan).toHaveLength(1);
    expect(scan[0] - scheduler.clock.now()).toBeGreaterThan(0);
    expect(scan[0] - scheduler.clock.now()).toBeLessThanOrEqual(30_000);
  });

  it('recomputes the next instant after a clock jump and never fires one twice', async () => {
    const clock = new FixedClock(0);
    const scheduler = new ManualJobScheduler({ clock });
    const due: number[] = [];
    scheduler.register({ name: 'a.tick', every: '1m', run: (e) => void due.push(e.scheduledAt.getTime()) });
    await scheduler.start();
    await scheduler.advance(60_000);
    clock.set(30_000); // the wall clock jumps back
    await scheduler.advance(60_000);
    await scheduler.advance(60_000);
    expect(due).toEqual([60_000, 120_000]);
  });
});

describe('ManualTimers with periodic work', () => {
  it('skips the periods in which the work would find nothing, and fires the others on their rhythm', async () => {
    let idle = true;
    const timers = new ManualTimers(new FixedClock(0), { periodicWorkIdle: () => idle });
    const worked: number[] = [];
    const task = new PeriodicTask(
      timers,
      1_000,
      async () => void worked.push(timers.now()),
      () => undefined,
    );
    const other: number[] = [];
    task.start();
    timers.at(4_500, () => {
      other.push(timers.now());
      idle = false; // e.g. a run starts: from now on the scan has something to look at
    });
    await timers.advance(7_000);
    // 1 s to 4 s skipped; 4.5 s fires; from then on every period fires, still on the whole seconds.
    expect(other).toEqual([4_500]);
    expect(worked).toEqual([5_000, 6_000, 7_000]);
    idle = true;
    await timers.advance(1_000_000);
    expect(worked).toEqual([5_000, 6_000, 7_000]);
    expect(timers.pending).toEqual([1_008_000]);
    await task.stop();
  });

  it('fires every period without the option', async () => {
    const timers = new ManualTimers(new FixedClock(0));
    let worked = 0;
    const task = new PeriodicTask(
      timers,
      1_000,
      async () => void worked++,
      () => undefined,
    );
    task.start();
    await timers.advance(5_000);
    expect(worked).toBe(5);
    await task.stop();
  });
});
