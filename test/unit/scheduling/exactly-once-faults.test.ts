import { JobLeaseDatabaseError, type JobLeaseWithData, JobSchedulerStatus } from '../../../src/features';
import { JobScheduleEngine } from '../../../src/features/scheduling/job-schedule-engine';
import { OccurrenceRunner } from '../../../src/features/scheduling/occurrence/occurrence-runner';
import { occurrenceRunKey } from '../../../src/features/scheduling/occurrence/occurrence-keys';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import type { SchedulerHistory, SchedulerLease } from '../../../src/features/scheduling/scheduler-ports';
import type { JobExecution, JobRunRecord, ScheduledJobOptions } from '../../../src/features/scheduling/scheduling.types';
import { ManualTimers } from '../../../src/features/scheduling/testing/manual-timers';
import { FixedClock, InMemoryJobLease, ManualJobScheduler } from '../../../src/features/testing';
import { leaseLosingFirstClaimAnswer } from '../../support/lost-claim-answer';

/**
 * The faults that claims ahead, hand-over and batched completes opened, each played by instances
 * that share one lease and one clock, each with timers of its own: an instance whose timers are
 * not advanced is stalled (a SIGSTOP, a blocked event loop), as the others go on.
 */

const MINUTE = 60_000;
/** The timers without `observe`: advancing them never waits for a lease operation (one held on purpose, one retried on these very timers). */
const unobserved = (timers: ManualTimers) => ({ now: () => timers.now(), at: (instant: number, fn: () => void) => timers.at(instant, fn) });
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

interface Started {
  node: string;
  scheduledAt: number;
  trigger: string;
  fencingToken: number;
}

class Fleet {
  readonly clock = new FixedClock(0);
  readonly lease = new InMemoryJobLease(this.clock);
  readonly started: Started[] = [];
  readonly records: Array<JobRunRecord & { node: string }> = [];
  private readonly nodes = new Map<string, { engine: JobScheduleEngine; timers: ManualTimers }>();

  node(
    name: string,
    job: { name: string } & ScheduledJobOptions,
    options: {
      claimAheadMs?: number;
      history?: SchedulerHistory;
      lease?: SchedulerLease;
      random?: () => number;
      run?: (execution: JobExecution) => Promise<void> | void;
      tenants?: readonly string[];
    } = {},
  ): JobScheduleEngine {
    const timers = new ManualTimers(this.clock);
    const engine = new JobScheduleEngine({
      timers,
      lease: options.lease ?? this.lease,
      history: options.history ?? this.lease,
      logger: silent,
      abandoned: this.lease,
      takeOverScanMs: 1_000,
      claimAheadMs: options.claimAheadMs ?? 0,
      random: options.random ?? (() => 0.5),
      ...(options.tenants ? { tenants: { listTenants: () => options.tenants as readonly string[] } } : {}),
    });
    const { name: jobName, ...declared } = job;
    const handler = async (execution: JobExecution) => {
      this.started.push({ node: name, scheduledAt: execution.scheduledAt.getTime(), trigger: execution.trigger, fencingToken: execution.fencingToken });
      await options.run?.(execution);
    };
    engine.register({ declaration: checkJobDeclaration(jobName, declared), handler, enabled: true });
    engine.onRun((record) => void this.records.push({ ...record, node: name }));
    this.nodes.set(name, { engine, timers });
    return engine;
  }

  /** Advances the shared clock in steps, firing the timers of the nodes named (the others are stalled). */
  async advance(ms: number, nodes: string[] = [...this.nodes.keys()], stepMs = 100): Promise<void> {
    for (let done = 0; done < ms; done += stepMs) {
      const step = Math.min(stepMs, ms - done);
      const [first, ...rest] = nodes.map((node) => this.nodes.get(node)!.timers);
      await first.advance(step);
      for (const timers of rest) await timers.advance(0);
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.nodes.values()].map(({ engine }) => engine.stop()));
  }

  runsOf(scheduledAt: number): Started[] {
    return this.started.filter((run) => run.scheduledAt === scheduledAt);
  }
}

describe('a claim ahead is held from the claim', () => {
  it('keeps its lease through a jitter longer than the lease minus the claim lead: one run, no take-over elsewhere', async () => {
    const fleet = new Fleet();
    const job = { name: 'reports.jittered', every: '1m', leaseMs: 4_000, jitterMs: 10_000 };
    // a claims 1 s ahead and waits a 9.9 s jitter; b (no jitter drawn) loses the instant, then takes over what it finds abandoned.
    const a = fleet.node('a', job, { claimAheadMs: 1_000, random: () => 0.99 });
    const b = fleet.node('b', job, { random: () => 0 });
    await a.start();
    await fleet.advance(MINUTE - 1_500, ['a']);
    await b.start();
    await fleet.advance(15_000);
    await fleet.stop();
    expect(fleet.runsOf(MINUTE)).toEqual([expect.objectContaining({ node: 'a', trigger: 'schedule' })]);
    expect(fleet.lease.statusOf('reports.jittered', occurrenceRunKey(MINUTE))).toBe(JobSchedulerStatus.SUCCESS);
  });

  it('never starts a handler on a claim whose lease ran out while its instance stalled: the take-over elsewhere is the one run', async () => {
    const fleet = new Fleet();
    const job = { name: 'reports.stalled', every: '1m', leaseMs: 4_000 };
    const a = fleet.node('a', job, { claimAheadMs: 1_000 });
    const b = fleet.node('b', job);
    // b is started late, so that a alone claims the instant ahead.
    await a.start();
    await fleet.advance(MINUTE - 900, ['a']); // a claimed at 59 s
    expect(fleet.lease.statusOf('reports.stalled', occurrenceRunKey(MINUTE))).toBe(JobSchedulerStatus.RUNNING);
    await b.start();
    // a is stopped (SIGSTOP) for 7.7 s; b's take-over scan finds the lease run out and runs it.
    await fleet.advance(7_700, ['b']);
    expect(fleet.runsOf(MINUTE)).toEqual([expect.objectContaining({ node: 'b', trigger: 'take-over', fencingToken: 2 })]);
    // a goes on (SIGCONT): its claim is proven by one fenced heartbeat, which finds another owner.
    await fleet.advance(2_000);
    await fleet.stop();
    expect(fleet.runsOf(MINUTE)).toHaveLength(1);
    expect(fleet.records.filter((record) => record.node === 'a' && record.scheduledAt.getTime() === MINUTE).map((record) => record.outcome)).toEqual([
      'skipped-locked',
    ]);
  });
});

describe('a graceful stop while a claimed run waits for its jitter', () => {
  it('hands the claim over: another instance runs it at its next scan, not a lease later, and the stopped one never does', async () => {
    const fleet = new Fleet();
    const job = { name: 'reports.jitter-stop', every: '1m', leaseMs: 40_000, jitterMs: 10_000 };
    const a = fleet.node('a', job, { claimAheadMs: 5_000, random: () => 0.99 });
    const b = fleet.node('b', job, { random: () => 0 });
    await a.start();
    await fleet.advance(MINUTE - 5_500, ['a']);
    await b.start();
    // a claimed at 55 s and, from 60 s, waits its 9.9 s jitter; b lost the instant to a's claim.
    await fleet.advance(7_000);
    expect(fleet.runsOf(MINUTE)).toEqual([]);
    await a.stop();
    // b's take-over scan (every second) finds the handed-over row: far sooner than a's 40 s lease.
    await fleet.advance(3_000, ['b']);
    expect(fleet.runsOf(MINUTE)).toEqual([expect.objectContaining({ node: 'b', trigger: 'take-over' })]);
    await fleet.stop();
    expect(fleet.lease.statusOf('reports.jitter-stop', occurrenceRunKey(MINUTE))).toBe(JobSchedulerStatus.SUCCESS);
  });
});

describe('a process frozen between the proof of its claim and the start of the handler', () => {
  it('does not start the handler on a lease that ran out meanwhile: it is left to the take-over, which runs it', async () => {
    const fleet = new Fleet();
    const timers = new ManualTimers(fleet.clock);
    const runner = new OccurrenceRunner(fleet.lease, unobserved(timers), silent);
    const declaration = checkJobDeclaration('reports.frozen', { every: '1m', leaseMs: 10_000 });
    fleet.clock.set(MINUTE);
    const started: number[] = [];
    const record = await runner.run({
      job: declaration,
      handler: () => void started.push(fleet.clock.now()),
      scheduledAt: MINUTE,
      trigger: 'schedule',
      // Proven held; then the process is frozen for 20 s (twice the lease) before its handler starts.
      enter: () => {
        fleet.clock.set(fleet.clock.now() + 20_000);
        return () => undefined;
      },
    });
    expect(started).toEqual([]);
    expect(record.outcome).toBe('skipped-locked');
    // Left to run out, as a stalled holder's: another instance's take-over scan runs it.
    const b = fleet.node('b', { name: 'reports.frozen', every: '1m', leaseMs: 10_000 });
    await b.start();
    await fleet.advance(2_000, ['b']);
    await b.idle();
    expect(fleet.runsOf(MINUTE)).toEqual([expect.objectContaining({ node: 'b', trigger: 'take-over' })]);
    await fleet.stop();
  });
});

describe('a stall across a claim time and its instant', () => {
  it('keeps the job armed when a timer calls back at once, inside at(), for an instant already passed (as system timers did)', async () => {
    const fleet = new Fleet();
    // Timers like Node's re-checked against the wall clock, without the manual timers' time travel: a
    // timer fires late, at the clock's reading; an instant already passed calls back inside at().
    let pending: Array<{ instant: number; fn: () => void }> = [];
    const timers = {
      now: () => fleet.clock.now(),
      at: (instant: number, fn: () => void) => {
        if (instant <= fleet.clock.now()) {
          fn();
          return () => undefined;
        }
        const timer = { instant, fn };
        pending.push(timer);
        return () => void (pending = pending.filter((other) => other !== timer));
      },
    };
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const runFor = async (ms: number) => {
      for (let done = 0; done < ms; done += 100) {
        fleet.clock.set(fleet.clock.now() + 100);
        const due = pending.filter((timer) => timer.instant <= fleet.clock.now()).sort((a, b) => a.instant - b.instant);
        pending = pending.filter((timer) => !due.includes(timer));
        for (const timer of due) timer.fn();
        for (let i = 0; i < 5; i++) await turn();
      }
    };
    const engine = new JobScheduleEngine({ timers, lease: fleet.lease, history: fleet.lease, logger: silent, claimAheadMs: 2_000 });
    const ran: number[] = [];
    engine.register({
      declaration: checkJobDeclaration('reports.every-3s', { every: '3s', leaseMs: 10_000 }),
      handler: (e) => void ran.push(e.scheduledAt.getTime()),
      enabled: true,
    });
    await engine.start();
    await runFor(9_900);
    // Stalled (SIGSTOP) from before the claim time of 12 s (10 s) until after that instant.
    fleet.clock.set(14_400);
    await runFor(30_000);
    await engine.stop();
    // The instants after the stall run: the job was not disarmed by it.
    expect(ran.filter((instant) => instant >= 15_000)).toEqual([15_000, 18_000, 21_000, 24_000, 27_000, 30_000, 33_000, 36_000, 39_000, 42_000]);
  });
});

describe('overlap counts runs, not claims', () => {
  it('an instance busy with the previous run does not claim the next occurrence ahead: an idle instance runs it', async () => {
    const fleet = new Fleet();
    let release!: () => void;
    const long = new Promise<void>((resolve) => (release = resolve));
    const job = { name: 'reports.long', every: '1m', leaseMs: 3 * MINUTE };
    // a's first run outlasts the interval; b is idle.
    const a = fleet.node('a', job, { claimAheadMs: 2_000, run: ({ scheduledAt }) => (scheduledAt.getTime() === MINUTE ? long : undefined) });
    const b = fleet.node('b', job, { claimAheadMs: 2_000, random: () => 0.5 });
    await a.start();
    await fleet.advance(MINUTE + 100, ['a']); // a claimed and runs 1m
    await b.start();
    await fleet.advance(MINUTE + 5_000);
    release();
    await fleet.advance(1_000);
    await fleet.stop();
    expect(fleet.runsOf(MINUTE)).toEqual([expect.objectContaining({ node: 'a' })]);
    expect(fleet.runsOf(2 * MINUTE)).toEqual([expect.objectContaining({ node: 'b', trigger: 'schedule' })]);
  });

  it('two occurrences whose claims are both in flight are both admitted: a slow claim is not a run', async () => {
    const clock = new FixedClock(0);
    const memory = new InMemoryJobLease(clock);
    const pending: Array<() => void> = [];
    // Every claim answers only when the test says so (a slow boundary).
    const slow: SchedulerLease = {
      acquire: (options) => new Promise((resolve) => pending.push(() => void memory.acquire(options).then(resolve))),
      acquireBatch: (options) => memory.acquireBatch(options),
      heartbeat: (value) => memory.heartbeat(value),
      complete: (value, data, options) => memory.complete(value, data, options),
      fail: (value, data, options) => memory.fail(value, data, options),
    };
    const timers = new ManualTimers(clock);
    const engine = new JobScheduleEngine({ timers: unobserved(timers), lease: slow, logger: silent });
    const ran: number[] = [];
    engine.register({
      declaration: checkJobDeclaration('reports.every-second', { every: '1s' }),
      handler: (e) => void ran.push(e.scheduledAt.getTime()),
      enabled: true,
    });
    await engine.start();
    await timers.advance(1_000); // the 1 s claim is in flight
    await timers.advance(1_000); // the 2 s one too: admitted, not skipped as overlapping
    expect(engine.runs.filter((record) => record.outcome === 'skipped-overlap')).toEqual([]);
    // The claims answer one after the other; the 1 s run has ended when the 2 s one starts.
    for (const answer of pending.splice(0)) {
      answer();
      for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    }
    await engine.idle();
    await engine.stop();
    expect(ran.sort()).toEqual([1_000, 2_000]);
  });
});

describe('an occurrence skipped as overlapping, its check pending when the instance stops', () => {
  it('is handed over at the stop when nobody claimed it: the next instance runs it, the check is not lost with the instance', async () => {
    const fleet = new Fleet();
    let release: () => void = () => undefined;
    const job = { name: 'reports.overrun', every: '10s' };
    // On a, the run of 10 s overruns past 20 s: 20 s is skipped there; b is not up yet.
    const a = fleet.node('a', job, {
      run: (execution) => (execution.scheduledAt.getTime() === 10_000 ? new Promise<void>((resolve) => (release = resolve)) : undefined),
    });
    const b = fleet.node('b', job);
    await a.start();
    await fleet.advance(25_000, ['a']);
    expect(fleet.lease.statusOf('reports.overrun', occurrenceRunKey(20_000))).toBeUndefined();
    const stopping = a.stop();
    release();
    await stopping;
    expect(fleet.lease.statusOf('reports.overrun', occurrenceRunKey(20_000))).toBe(JobSchedulerStatus.RUNNING);
    await b.start();
    await fleet.advance(3_000, ['b']);
    await b.idle();
    expect(fleet.runsOf(20_000)).toEqual([expect.objectContaining({ node: 'b', trigger: 'take-over' })]);
    expect(fleet.lease.statusOf('reports.overrun', occurrenceRunKey(20_000))).toBe(JobSchedulerStatus.SUCCESS);
    await fleet.stop();
  });
});

describe('a per-tenant occurrence skipped as overlapping on every instance', () => {
  const TENANTS = ['acme', 'globex'];
  const job = { name: 'reports.tenants', every: '10s', tenancy: 'per-tenant' as const };
  /** On a, acme's run of 10 s overruns past 20 s: the whole 20 s occurrence is skipped there. */
  const overrunning = (fleet: Fleet) => {
    let release: () => void = () => undefined;
    const a = fleet.node('a', job, {
      tenants: TENANTS,
      run: (execution) =>
        execution.scheduledAt.getTime() === 10_000 && execution.tenantId === 'acme' ? new Promise<void>((resolve) => (release = resolve)) : undefined,
    });
    return { a, release: () => release() };
  };

  it('is recorded for each tenant (FAIL skipped-overlap) one lateness tolerance later when nobody ran it: never silently lost', async () => {
    const fleet = new Fleet();
    const { a, release } = overrunning(fleet);
    await a.start();
    await fleet.advance(25_000, ['a']);
    release();
    for (const tenantId of TENANTS) expect(fleet.lease.statusOf('reports.tenants', occurrenceRunKey(20_000, tenantId))).toBeUndefined();
    await fleet.advance(60_000, ['a']);
    await a.idle();
    for (const tenantId of TENANTS) {
      expect(fleet.lease.statusOf('reports.tenants', occurrenceRunKey(20_000, tenantId))).toBe(JobSchedulerStatus.FAIL);
    }
    expect(fleet.runsOf(20_000)).toEqual([]);
    await fleet.stop();
  });

  it('is handed over tenant by tenant when its instance stops before the check: the next instance runs every tenant', async () => {
    const fleet = new Fleet();
    const { a, release } = overrunning(fleet);
    const b = fleet.node('b', job, { tenants: TENANTS });
    await a.start();
    await fleet.advance(25_000, ['a']);
    const stopping = a.stop();
    release();
    await stopping;
    for (const tenantId of TENANTS) {
      expect(fleet.lease.statusOf('reports.tenants', occurrenceRunKey(20_000, tenantId))).toBe(JobSchedulerStatus.RUNNING);
    }
    await b.start();
    await fleet.advance(3_000, ['b']);
    await b.idle();
    expect(fleet.runsOf(20_000).map((run) => [run.node, run.trigger])).toEqual([
      ['b', 'take-over'],
      ['b', 'take-over'],
    ]);
    for (const tenantId of TENANTS) {
      expect(fleet.lease.statusOf('reports.tenants', occurrenceRunKey(20_000, tenantId))).toBe(JobSchedulerStatus.SUCCESS);
    }
    await fleet.stop();
  });
});

describe('an instant claimed ahead and passed unrun (a stall past the next instant)', () => {
  it('runs within the late tolerance: its holder is the only one that can, and the latest instant runs too', async () => {
    const fleet = new Fleet();
    const job = { name: 'reports.every-10s', every: '10s', leaseMs: MINUTE };
    const a = fleet.node('a', job, { claimAheadMs: 2_000 });
    await a.start();
    await fleet.advance(9_000, ['a']); // claimed 10 s ahead at 8 s
    expect(fleet.lease.statusOf('reports.every-10s', occurrenceRunKey(10_000))).toBe(JobSchedulerStatus.RUNNING);
    fleet.clock.set(20_500); // stalled past 10 s and 20 s
    await fleet.advance(1_000, ['a']);
    await a.idle();
    await fleet.stop();
    expect(fleet.runsOf(10_000)).toEqual([expect.objectContaining({ node: 'a', trigger: 'schedule' })]);
    expect(fleet.runsOf(20_000)).toEqual([expect.objectContaining({ node: 'a' })]);
    expect(fleet.lease.statusOf('reports.every-10s', occurrenceRunKey(10_000))).toBe(JobSchedulerStatus.SUCCESS);
  });

  it('is recorded missed (FAIL outcome missed) by its holder past the late tolerance: never silently lost', async () => {
    const fleet = new Fleet();
    const job = { name: 'reports.every-10s', every: '10s', leaseMs: 5 * MINUTE };
    const a = fleet.node('a', job, { claimAheadMs: 2_000 });
    await a.start();
    await fleet.advance(9_000, ['a']); // claimed 10 s ahead at 8 s
    fleet.clock.set(10_000 + 2 * MINUTE); // stalled two minutes, within the lease
    await fleet.advance(1_000, ['a']);
    await a.idle();
    await fleet.stop();
    expect(fleet.runsOf(10_000)).toEqual([]);
    expect(fleet.lease.statusOf('reports.every-10s', occurrenceRunKey(10_000))).toBe(JobSchedulerStatus.FAIL);
    expect(fleet.records.filter((record) => record.scheduledAt.getTime() === 10_000).map((record) => record.outcome)).toEqual(['missed']);
  });
});

describe('a boot whose history read answers after its first claim ahead', () => {
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it('still catches up: the latest instant that passed runs once, the ones before it are recorded missed, none is silently lost', async () => {
    const fleet = new Fleet();
    const job = { name: 'reports.boot', every: '1m', leaseMs: 4 * MINUTE };
    const a = fleet.node('a', job);
    await a.start();
    await fleet.advance(MINUTE + 100, ['a']);
    await a.stop();
    expect(fleet.runsOf(MINUTE)).toHaveLength(1);
    // The fleet is down from 1 min to 5 min 30 s: 2, 3 and 4 min passed unrun, 5 min is within the tolerance.
    fleet.clock.set(5 * MINUTE + 30_000);
    // A slow database at boot: the history answers only once the claim ahead of 6 min is written.
    let answer = (): void => undefined;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const slowHistory: SchedulerHistory = {
      latestOccurrence: async (name, until) => {
        await answered;
        return fleet.lease.latestOccurrence(name, until);
      },
      recordedOccurrences: (name, from, until) => fleet.lease.recordedOccurrences(name, from, until),
    };
    const b = fleet.node('b', job, { claimAheadMs: 40_000, history: slowHistory });
    const booted = b.start();
    for (let round = 0; round < 200 && fleet.lease.statusOf('reports.boot', occurrenceRunKey(6 * MINUTE)) === undefined; round++) await turn();
    expect(fleet.lease.statusOf('reports.boot', occurrenceRunKey(6 * MINUTE))).toBe(JobSchedulerStatus.RUNNING);
    answer();
    await booted;
    await fleet.advance(31_000, ['b']);
    await fleet.stop();
    expect(fleet.runsOf(5 * MINUTE)).toEqual([expect.objectContaining({ node: 'b' })]);
    expect(fleet.runsOf(6 * MINUTE)).toEqual([expect.objectContaining({ node: 'b', trigger: 'schedule' })]);
    // Reported by the instance that ran the latest one (a WARN and a record each).
    expect(fleet.records.filter((record) => record.outcome === 'missed').map((record) => record.scheduledAt.getTime() / MINUTE)).toEqual([2, 3, 4]);
  });
});

describe('finalization is retried within the lease', () => {
  /**
   * Three jobs due together on one instance whose completes share a statement; `failures` says
   * how the first completeMany statements fail. Every complete and completeMany call is kept.
   */
  const completedTogether = async (failures: unknown[]) => {
    const fleet = new Fleet();
    const batched: Array<{ leases: JobLeaseWithData[]; again: boolean }> = [];
    const alone: { id: string; data: unknown; again: boolean }[] = [];
    const lease: SchedulerLease = {
      acquire: (options) => fleet.lease.acquire(options),
      acquireBatch: (options) => fleet.lease.acquireBatch(options),
      acquireMany: (runs) => fleet.lease.acquireMany(runs),
      heartbeat: (value) => fleet.lease.heartbeat(value),
      complete: (value, data, options) => {
        alone.push({ id: value.id, data, again: options?.again === true });
        return fleet.lease.complete(value, data, options);
      },
      fail: (value, data, options) => fleet.lease.fail(value, data, options),
      expireMany: (leases) => fleet.lease.expireMany(leases),
      completeMany: async (leases, _data, options) => {
        batched.push({ leases: [...leases], again: options?.again === true });
        const failure = failures.shift();
        if (failure !== undefined) throw failure;
        return Promise.all(leases.map((value) => fleet.lease.complete(value, value.data, options)));
      },
    };
    const names = ['reports.a', 'reports.b', 'reports.c'];
    const timers = new ManualTimers(fleet.clock);
    const engine = new JobScheduleEngine({ timers, lease, history: fleet.lease, logger: silent, abandoned: fleet.lease, takeOverScanMs: 1_000 });
    const ran: string[] = [];
    for (const name of names) engine.register({ declaration: checkJobDeclaration(name, { every: '1m' }), handler: () => void ran.push(name), enabled: true });
    const records: JobRunRecord[] = [];
    engine.onRun((record) => void records.push(record));
    await engine.start();
    await timers.advance(MINUTE);
    for (let step = 0; step < 50; step++) await timers.advance(100); // the holds' retries, then take-over scans
    await engine.idle();
    await engine.stop();
    // Each ran once and succeeded, and its row says so: nothing was left to a take-over.
    expect(ran.sort()).toEqual(names);
    expect(records.map((record) => [record.name, record.outcome]).sort()).toEqual(names.map((name) => [name, 'succeeded']));
    for (const name of names) expect(fleet.lease.statusOf(name, occurrenceRunKey(MINUTE))).toBe(JobSchedulerStatus.SUCCESS);
    // The first statement carried each run's own handlerMs.
    expect(batched[0].leases).toHaveLength(3);
    expect(batched[0].again).toBe(false);
    for (const value of batched[0].leases) expect(value.data).toEqual({ handlerMs: expect.any(Number) });
    return { batched, alone, first: batched[0].leases };
  };
  const transient = () => new JobLeaseDatabaseError('could not serialize access', { operation: 'complete', sqlState: '40001', retryable: true });
  const asRows = (leases: JobLeaseWithData[], again: boolean) => leases.map(({ id, data }) => [id, data, again]).sort();

  it('a batched complete statement the database could not answer is sent again whole, as a retry: no run alone, none fails, nothing runs again', async () => {
    const { batched, alone, first } = await completedTogether([transient()]);
    expect(batched).toHaveLength(2);
    expect(batched[1].again).toBe(true);
    expect(asRows(batched[1].leases, true)).toEqual(asRows(first, true));
    expect(alone).toEqual([]);
  });

  it('when the retry of the whole statement fails too, each run retries within its lease, as a retry with its own data, and nothing runs again', async () => {
    const { batched, alone, first } = await completedTogether([transient(), transient()]);
    expect(batched[1].again).toBe(true);
    // The holds' retries (their own jittered backoff): batched where they meet, alone where not, all `again`.
    const retried = [...batched.slice(2).flatMap(({ leases, again }) => asRows(leases, again)), ...alone.map(({ id, data, again }) => [id, data, again])];
    expect(retried.sort()).toEqual(asRows(first, true));
  });

  it('a batched complete statement that fails with an error no retry fixes sends each run alone, as a retry with its own data', async () => {
    const { batched, alone, first } = await completedTogether([
      new JobLeaseDatabaseError('invalid input syntax', { operation: 'complete', sqlState: '22P02', retryable: false }),
    ]);
    expect(batched).toHaveLength(1);
    expect(alone.map(({ id, data, again }) => [id, data, again]).sort()).toEqual(asRows(first, true));
  });

  it('a missed occurrence is recorded with the job lease, its write retried: never run later by a take-over', async () => {
    const fleet = new Fleet();
    let failures = 0;
    const acquired: Array<number | undefined> = [];
    const lease: SchedulerLease = {
      acquire: (options) => {
        acquired.push(options.leaseMs);
        return fleet.lease.acquire(options);
      },
      acquireBatch: (options) => fleet.lease.acquireBatch(options),
      heartbeat: (value) => fleet.lease.heartbeat(value),
      complete: (value, data, options) => fleet.lease.complete(value, data, options),
      // The first write of the missed record fails (a dropped connection).
      fail: async (value, data, options) => {
        if (failures++ === 0) throw new JobLeaseDatabaseError('Connection terminated unexpectedly', { operation: 'fail', sqlState: '57P01', retryable: true });
        return fleet.lease.fail(value, data, options);
      },
    };
    // One occurrence at 1 m, reached 2 m late (beyond the 60 s tolerance): missed.
    const timers = new ManualTimers(fleet.clock);
    const engine = new JobScheduleEngine({
      timers: unobserved(timers),
      lease,
      history: fleet.lease,
      logger: silent,
      abandoned: fleet.lease,
      takeOverScanMs: 1_000,
    });
    const ran: number[] = [];
    engine.register({
      declaration: checkJobDeclaration('reports.hourly', { cron: '1 * * * *', leaseMs: 20_000 }),
      handler: (e) => void ran.push(e.scheduledAt.getTime()),
      enabled: true,
    });
    await engine.start();
    fleet.clock.set(3 * MINUTE); // the process stalled past the tolerance
    for (let step = 0; step < 300; step++) await timers.advance(100); // the retry, then take-over scans
    await engine.idle();
    await engine.stop();
    expect(ran).toEqual([]);
    expect(acquired).toEqual([20_000]);
    expect(failures).toBe(2);
    expect(fleet.lease.statusOf('reports.hourly', occurrenceRunKey(MINUTE))).toBe(JobSchedulerStatus.FAIL);
  });
});

describe('a job changed or paused while its next instant is claimed ahead', () => {
  const declared = { every: '1m', leaseMs: 4 * MINUTE };
  /** Two instances; a alone claims 1 min ahead (b starts after a's claim time, so its claim ahead is lost to a's). */
  const claimedAhead = async (name: string) => {
    const fleet = new Fleet();
    const a = fleet.node('a', { name, ...declared }, { claimAheadMs: 10_000 });
    const b = fleet.node('b', { name, ...declared }, { claimAheadMs: 10_000 });
    await a.start();
    await fleet.advance(MINUTE - 9_000, ['a']); // a claimed 1 min ahead at 50 s
    await b.start();
    await fleet.advance(1_000);
    expect(fleet.lease.statusOf(name, occurrenceRunKey(MINUTE))).toBe(JobSchedulerStatus.RUNNING);
    return { fleet, a, b };
  };

  /** Past the instant: it ran once, and its row is SUCCESS. */
  const runsOnce = async ({ fleet, a, b }: { fleet: Fleet; a: JobScheduleEngine; b: JobScheduleEngine }, name: string) => {
    await fleet.advance(10_000);
    await a.idle();
    await b.idle();
    await fleet.stop();
    expect(fleet.runsOf(MINUTE)).toHaveLength(1);
    expect(fleet.lease.statusOf(name, occurrenceRunKey(MINUTE))).toBe(JobSchedulerStatus.SUCCESS);
  };

  it('runs the instant once when the new definition still has it but is not claimed ahead (overlap now queue)', async () => {
    const name = 'reports.requeued';
    const { fleet, a, b } = await claimedAhead(name);
    // The same schedule, now queueing overlaps (not claimed ahead): 1 min is still one of its instants.
    for (const [node, engine] of [
      ['a', a],
      ['b', b],
    ] as const) {
      await engine.upsert({
        declaration: checkJobDeclaration(name, { ...declared, overlap: 'queue' }),
        handler: (execution) =>
          void fleet.started.push({ node, scheduledAt: execution.scheduledAt.getTime(), trigger: execution.trigger, fencingToken: execution.fencingToken }),
        enabled: true,
      });
    }
    await runsOnce({ fleet, a, b }, name);
  });

  // Resumed 7 s before the instant (claimed ahead again at once), or 3 s before it (too close to claim ahead).
  it.each([2_000, 6_000])('runs the instant once when the job is paused at 51 s and resumed %i ms later, before it', async (pausedMs) => {
    const name = 'reports.resumed';
    const { fleet, a, b } = await claimedAhead(name);
    // A pause seen by every instance, lifted before the instant.
    a.setEnabled(name, false);
    b.setEnabled(name, false);
    await fleet.advance(pausedMs);
    a.setEnabled(name, true);
    b.setEnabled(name, true);
    await runsOnce({ fleet, a, b }, name);
  });

  it('still does not run an instant that fell due while paused (its claim stays ended), and runs the next one', async () => {
    const name = 'reports.paused-past';
    const { fleet, a, b } = await claimedAhead(name);
    a.setEnabled(name, false);
    b.setEnabled(name, false);
    await fleet.advance(14_000); // resumed at 65 s
    a.setEnabled(name, true);
    b.setEnabled(name, true);
    await fleet.advance(MINUTE);
    await a.idle();
    await b.idle();
    await fleet.stop();
    expect(fleet.runsOf(MINUTE)).toEqual([]);
    expect(fleet.lease.statusOf(name, occurrenceRunKey(MINUTE))).toBe(JobSchedulerStatus.FAIL);
    expect(fleet.runsOf(2 * MINUTE)).toHaveLength(1);
  });

  it("catches up (missed: 'run-once') an instant that passed while the job was off, though its claim ahead was ended when it went off", async () => {
    const name = 'reports.caught-up';
    const fleet = new Fleet();
    const job = { name, ...declared, missed: 'run-once' as const };
    const a = fleet.node('a', job, { claimAheadMs: 10_000 });
    const b = fleet.node('b', job, { claimAheadMs: 10_000 });
    await a.start();
    await fleet.advance(MINUTE + 1_000, ['a']); // 1 min ran on a
    await b.start();
    await fleet.advance(MINUTE - 6_000); // 1 min 55 s: a claimed 2 min ahead
    expect(fleet.lease.statusOf(name, occurrenceRunKey(2 * MINUTE))).toBe(JobSchedulerStatus.RUNNING);
    const definition = (node: string, enabled: boolean) => ({
      declaration: checkJobDeclaration(name, { ...declared, missed: 'run-once' }),
      handler: (execution: JobExecution) =>
        void fleet.started.push({ node, scheduledAt: execution.scheduledAt.getTime(), trigger: execution.trigger, fencingToken: execution.fencingToken }),
      enabled,
    });
    // Off from 1 min 55 s to 2 min 5 s (a dynamic schedule disabled, then enabled): 2 min passed meanwhile.
    await Promise.all([a.upsert(definition('a', false)), b.upsert(definition('b', false))]);
    await fleet.advance(10_000);
    await Promise.all([a.upsert(definition('a', true)), b.upsert(definition('b', true))]);
    await fleet.advance(5_000);
    await a.idle();
    await b.idle();
    await fleet.stop();
    expect(fleet.runsOf(2 * MINUTE)).toHaveLength(1);
    expect(fleet.lease.statusOf(name, occurrenceRunKey(2 * MINUTE))).toBe(JobSchedulerStatus.SUCCESS);
  });

  it('runs the instant once when a dynamic schedule changes handler while the instant is claimed ahead under the old one', async () => {
    const fleet = new Fleet();
    const dummy = { name: 'reports.unused', every: '1d' };
    const schedule = (node: string, handler: string) => ({
      declaration: { ...checkJobDeclaration(handler, declared), dynamicSchedule: { id: 'moved-handler', data: null } },
      handler: (execution: JobExecution) =>
        void fleet.started.push({ node, scheduledAt: execution.scheduledAt.getTime(), trigger: execution.trigger, fencingToken: execution.fencingToken }),
      enabled: true,
    });
    const a = fleet.node('a', dummy, { claimAheadMs: 10_000 });
    await a.start();
    await a.upsert(schedule('a', 'reports.old-handler'));
    await fleet.advance(MINUTE - 8_000, ['a']); // a claimed 1 min ahead at 50 s, under the old handler's code
    // The schedule moves to another handler; b loads it (it did not run the old handler) and claims ahead too.
    await a.upsert(schedule('a', 'reports.new-handler'));
    const b = fleet.node('b', dummy, { claimAheadMs: 10_000 });
    await b.start();
    await b.upsert(schedule('b', 'reports.new-handler'));
    await fleet.advance(10_000);
    await a.idle();
    await b.idle();
    await fleet.stop();
    expect(fleet.runsOf(MINUTE)).toHaveLength(1);
  });
});

describe('a claim at the instant whose answer is lost (in-memory lease)', () => {
  /** One instance, one global job claimed at its instant; the first claim commits and its answer never comes (`fails`). */
  const setUp = (fails: JobLeaseDatabaseError) => {
    const { clock, lease, calls } = leaseLosingFirstClaimAnswer(fails);
    const ran: number[] = [];
    const scheduler = new ManualJobScheduler({ clock, lease });
    scheduler.register({ name: 'reports.hourly', every: '1h', run: ({ scheduledAt }) => void ran.push(scheduledAt.getTime()) });
    const row = () => lease.statusOf('reports.hourly', occurrenceRunKey(60 * MINUTE));
    return { scheduler, calls, ran, row };
  };
  const lost = () => new JobLeaseDatabaseError('Connection terminated unexpectedly', { operation: 'acquire', retryable: true });

  it('is sent again 250 ms later under its owner token: the run it won starts then, once', async () => {
    const { scheduler, calls, ran, row } = setUp(lost());
    await scheduler.start();
    await scheduler.advance(60 * MINUTE);
    expect(ran).toEqual([]);
    await scheduler.advance(250);
    expect(calls).toEqual([
      { runs: 1, again: false },
      { runs: 1, again: true },
    ]);
    expect(ran).toEqual([60 * MINUTE]);
    expect(scheduler.runs.map((record) => record.outcome)).toEqual(['succeeded']);
    expect(row()).toBe(JobSchedulerStatus.SUCCESS);
    await scheduler.stop();
  });

  it('is not sent again for an error no retry fixes: recorded unavailable, its row left to the take-over', async () => {
    const { scheduler, calls, ran, row } = setUp(new JobLeaseDatabaseError('permission denied', { operation: 'acquire', sqlState: '42501', retryable: false }));
    await scheduler.start();
    await scheduler.advance(60 * MINUTE + 1_000);
    expect(calls).toEqual([{ runs: 1, again: false }]);
    expect(ran).toEqual([]);
    expect(scheduler.runs.map((record) => record.errorCode)).toEqual(['JOB_LEASE_UNAVAILABLE']);
    expect(row()).toBe(JobSchedulerStatus.RUNNING);
    await scheduler.stop();
  });

  it('is not sent again once the instance stops during the pause, and the stop does not wait for the pause', async () => {
    const { scheduler, calls, ran } = setUp(lost());
    await scheduler.start();
    await scheduler.advance(60 * MINUTE);
    // The clock stays where it is: only the stop can end the pause.
    await scheduler.stop();
    expect(calls).toEqual([{ runs: 1, again: false }]);
    expect(ran).toEqual([]);
    expect(scheduler.runs.map((record) => record.errorCode)).toEqual(['JOB_LEASE_UNAVAILABLE']);
  });
});
