import { JobLeaseDatabaseError, LostJobLeaseError } from '../../src/features';
import { provenUntil } from '../../src/features/job-scheduler/run/lease-deadline';
import { type HoldClock, type HoldStatements, LeaseHold } from '../../src/features/job-scheduler/run/lease-hold';
import { ManualTimers } from '../../src/features/testing';

/**
 * The hold's rules on a manual clock: the signal aborts exactly at the deadline whatever the
 * heartbeat is doing, transient failures are retried inside it, and finalization retries with the
 * "again" statement. The same class runs on a real PostgreSQL in lease-deadline.test.ts.
 */
const LEASE_MS = 10_000;
const HEARTBEAT_MS = 2_000;
const ID = '00000000-0000-4000-8000-000000000001';

const transient = () => new JobLeaseDatabaseError('connection refused', { operation: 'heartbeat', retryable: true });
const permanent = () => new JobLeaseDatabaseError('permission denied', { operation: 'heartbeat', sqlState: '42501', retryable: false });

const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

interface Script {
  heartbeat?: (call: number, timeoutMs: number) => Promise<boolean>;
  finalize?: (call: number, again: boolean) => Promise<boolean>;
}

const setup = (script: Script = {}) => {
  const timers = new ManualTimers();
  const clock: HoldClock = { now: () => timers.now(), after: (delayMs, fn) => timers.at(timers.now() + delayMs, fn) };
  const calls = { heartbeat: [] as { at: number; timeoutMs: number }[], finalize: [] as { at: number; again: boolean }[] };
  const statements: HoldStatements = {
    heartbeat: (timeoutMs) => {
      calls.heartbeat.push({ at: timers.now(), timeoutMs });
      return script.heartbeat ? script.heartbeat(calls.heartbeat.length, timeoutMs) : Promise.resolve(true);
    },
    finalize: (_outcome, _data, again) => {
      calls.finalize.push({ at: timers.now(), again });
      return script.finalize ? script.finalize(calls.finalize.length, again) : Promise.resolve(true);
    },
  };
  const start = timers.now();
  const hold = new LeaseHold(
    { leaseId: ID, leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS, heldUntil: provenUntil(start, LEASE_MS), statementTimeoutMs: 5_000, clock, random: () => 0.5 },
    statements,
  ).start();
  let abortedAt: number | undefined;
  hold.signal.addEventListener('abort', () => (abortedAt = timers.now()), { once: true });
  return { timers, hold, calls, start, abortedAt: () => abortedAt };
};

describe('LeaseHold', () => {
  it('moves the deadline forward from each confirmed heartbeat send', async () => {
    const { timers, hold, start } = setup();
    expect(hold.heldUntil).toBe(start + 9_000);
    await timers.advance(HEARTBEAT_MS);
    expect(hold.heldUntil).toBe(start + HEARTBEAT_MS + 9_000);
    await timers.advance(60_000);
    expect(hold.signal.aborted).toBe(false);
    await hold.stop();
  });

  it('a signal first read after the abort is already aborted, with the first reason', async () => {
    const timers = new ManualTimers();
    const clock: HoldClock = { now: () => timers.now(), after: (delayMs, fn) => timers.at(timers.now() + delayMs, fn) };
    const statements: HoldStatements = { heartbeat: () => Promise.resolve(true), finalize: () => Promise.resolve(true) };
    const hold = new LeaseHold(
      { leaseId: ID, leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS, heldUntil: provenUntil(timers.now(), LEASE_MS), statementTimeoutMs: 5_000, clock },
      statements,
    ).start();
    const first = new Error('first');
    hold.abort(first);
    hold.abort(new Error('second'));
    expect(hold.signal.aborted).toBe(true);
    expect(hold.signal.reason).toBe(first);
    await hold.stop();
  });

  it('aborts exactly at the deadline while a heartbeat hangs', async () => {
    const { timers, hold, start, abortedAt } = setup({ heartbeat: () => never() });
    await timers.advance(8_999);
    expect(hold.signal.aborted).toBe(false);
    await timers.advance(1);
    expect(abortedAt()).toBe(start + 9_000);
    expect(hold.signal.reason).toBeInstanceOf(LostJobLeaseError);
    expect((hold.signal.reason as Error).message).toMatch(/local deadline passed/);
  });

  it('bounds each heartbeat by its interval and by the time left before the deadline it was sent under', async () => {
    let hold!: LeaseHold;
    let timers!: ManualTimers;
    const deadlines: number[] = [];
    // Each failing heartbeat takes its whole bound, as a statement timing out does.
    const rig = setup({
      heartbeat: (call, timeoutMs) => {
        deadlines.push(hold.heldUntil);
        if (call >= 6) return Promise.resolve(true);
        return new Promise<boolean>((_resolve, reject) => timers.at(timers.now() + timeoutMs, () => reject(transient())));
      },
    });
    hold = rig.hold;
    timers = rig.timers;
    await timers.advance(30_000);
    const { calls } = rig;
    expect(calls.heartbeat[0].timeoutMs).toBe(HEARTBEAT_MS);
    calls.heartbeat.forEach(({ at, timeoutMs }, index) => expect(at + timeoutMs).toBeLessThanOrEqual(deadlines[index]));
    // The last retries before the deadline are cut short by it, not by the interval.
    expect(calls.heartbeat.some(({ timeoutMs }) => timeoutMs < HEARTBEAT_MS)).toBe(true);
  });

  it('proves the lease from the instant a heartbeat was sent, not the instant its answer came', async () => {
    let timers!: ManualTimers;
    const slowAnswer = () => new Promise<boolean>((resolve) => timers.at(timers.now() + 1_500, () => resolve(true)));
    const rig = setup({ heartbeat: slowAnswer });
    timers = rig.timers;
    await timers.advance(HEARTBEAT_MS + 1_500);
    expect(rig.hold.heldUntil).toBe(rig.start + HEARTBEAT_MS + LEASE_MS - 1_000);
    await rig.hold.stop();
  });

  it('loses a lease that is already past its deadline when it starts', () => {
    const timers = new ManualTimers();
    const clock: HoldClock = { now: () => timers.now(), after: (delayMs, fn) => timers.at(timers.now() + delayMs, fn) };
    const hold = new LeaseHold(
      { leaseId: ID, leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS, heldUntil: timers.now() - 1, statementTimeoutMs: 5_000, clock },
      { heartbeat: async () => true, finalize: async () => true },
    ).start();
    expect(hold.signal.aborted).toBe(true);
    expect(hold.signal.reason).toBeInstanceOf(LostJobLeaseError);
  });

  it('also judges the deadline by the wall clock, which runs on while a suspended machine stops the monotonic one', async () => {
    const timers = new ManualTimers();
    let wall = 1_000_000;
    const clock: HoldClock = { now: () => timers.now(), wallNow: () => wall, after: (delayMs, fn) => timers.at(timers.now() + delayMs, fn) };
    const hold = new LeaseHold(
      { leaseId: ID, leaseMs: LEASE_MS, heartbeatMs: 0, heldUntil: provenUntil(timers.now(), LEASE_MS), statementTimeoutMs: 5_000, clock },
      { heartbeat: async () => true, finalize: async () => true },
    ).start();
    await timers.advance(1_000);
    expect(hold.signal.aborted).toBe(false);
    wall += 60_000; // an hour's suspend would look the same: the wall clock jumped, the monotonic one did not
    await timers.advance(1_000);
    expect(hold.signal.aborted).toBe(true);
    expect(timers.now()).toBeLessThan(provenUntil(0, LEASE_MS));
  });

  it('retries a transient heartbeat failure with backoff until one succeeds, without aborting', async () => {
    const { timers, hold, calls } = setup({ heartbeat: (call) => (call <= 5 ? Promise.reject(transient()) : Promise.resolve(true)) });
    await timers.advance(HEARTBEAT_MS + 3_000);
    expect(calls.heartbeat.length).toBeGreaterThanOrEqual(6);
    const gaps = calls.heartbeat.slice(1, 6).map((call, index) => call.at - calls.heartbeat[index].at);
    expect(gaps).toEqual([...gaps].sort((a, b) => a - b)); // backoff grows
    expect(hold.signal.aborted).toBe(false);
    await timers.advance(60_000);
    expect(hold.signal.aborted).toBe(false);
    await hold.stop();
  });

  it('aborts at the deadline, not before, when every retry fails', async () => {
    const { timers, start, abortedAt, hold, calls } = setup({ heartbeat: () => Promise.reject(transient()) });
    await timers.advance(60_000);
    expect(abortedAt()).toBe(start + 9_000);
    expect((hold.signal.reason as Error).cause).toBeInstanceOf(JobLeaseDatabaseError);
    const beatsAtAbort = calls.heartbeat.length;
    await timers.advance(60_000);
    expect(calls.heartbeat.length).toBe(beatsAtAbort);
  });

  it('aborts at once when another owner took the run over, or on an error no retry can fix', async () => {
    const taken = setup({ heartbeat: () => Promise.resolve(false) });
    await taken.timers.advance(HEARTBEAT_MS);
    expect(taken.abortedAt()).toBe(taken.start + HEARTBEAT_MS);
    expect((taken.hold.signal.reason as Error).message).toMatch(/another owner/);

    const denied = setup({ heartbeat: () => Promise.reject(permanent()) });
    await denied.timers.advance(HEARTBEAT_MS);
    expect(denied.abortedAt()).toBe(denied.start + HEARTBEAT_MS);
    expect((denied.hold.signal.reason as Error).cause).toBeInstanceOf(JobLeaseDatabaseError);
  });

  it('keeps heartbeating after a shutdown abort, so the run keeps its lease while it settles', async () => {
    const { timers, hold, calls } = setup();
    hold.abort(new Error('shutdown'));
    await timers.advance(3 * HEARTBEAT_MS);
    expect(calls.heartbeat).toHaveLength(3);
    await hold.stop();
  });

  it('retries finalization with the "again" statement, and counts its answer', async () => {
    const { timers, hold, calls } = setup({ finalize: (call) => (call < 3 ? Promise.reject(transient()) : Promise.resolve(true)) });
    const done = hold.complete({ rows: 1 });
    await timers.advance(5_000);
    await expect(done).resolves.toBe(true);
    expect(calls.finalize.map((call) => call.again)).toEqual([false, true, true]);
    expect(hold.signal.aborted).toBe(false);
  });

  it('gives up finalization at the deadline with the last error', async () => {
    // Heartbeats time out as the executor makes them (after their bound), finalization keeps failing.
    let timers!: ManualTimers;
    const timingOut = (_call: number, timeoutMs: number) =>
      new Promise<boolean>((_resolve, reject) => timers.at(timers.now() + timeoutMs, () => reject(transient())));
    const rig = setup({ heartbeat: timingOut, finalize: () => Promise.reject(transient()) });
    timers = rig.timers;
    const { hold, calls } = rig;
    await timers.advance(5_000);
    const done = hold.complete();
    const outcome = done.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await timers.advance(10_000);
    expect(await outcome).toBeInstanceOf(JobLeaseDatabaseError);
    expect(calls.finalize.every((call) => call.at < 9_000 + 1)).toBe(true);
  });

  it('aborts with LostJobLeaseError when finalization finds the run taken over', async () => {
    const { hold } = setup({ finalize: () => Promise.resolve(false) });
    expect(await hold.fail({ error: 'x' })).toBe(false);
    expect(hold.signal.reason).toBeInstanceOf(LostJobLeaseError);
  });

  it('checks finalize data before it stops anything', async () => {
    const timers = new ManualTimers();
    const clock: HoldClock = { now: () => timers.now(), after: (delayMs, fn) => timers.at(timers.now() + delayMs, fn) };
    let beats = 0;
    const hold = new LeaseHold(
      { leaseId: ID, leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS, heldUntil: provenUntil(0, LEASE_MS), statementTimeoutMs: 5_000, clock },
      {
        prepare: () => {
          throw new TypeError('bad data');
        },
        heartbeat: async () => {
          beats++;
          return true;
        },
        finalize: async () => true,
      },
    ).start();
    await expect(hold.complete(1n)).rejects.toThrow('bad data');
    await timers.advance(2 * HEARTBEAT_MS);
    expect(beats).toBe(2);
    await hold.stop();
  });
});

describe('LeaseHold held before use (a claim waiting to start)', () => {
  const held = (heartbeatMs: number) => {
    const timers = new ManualTimers();
    const clock: HoldClock = { now: () => timers.now(), after: (delayMs, fn) => timers.at(timers.now() + delayMs, fn) };
    const hold = new LeaseHold(
      { leaseId: ID, leaseMs: LEASE_MS, heartbeatMs, heldUntil: provenUntil(timers.now(), LEASE_MS), statementTimeoutMs: 5_000, clock, random: () => 0.5 },
      { heartbeat: () => Promise.resolve(true), finalize: () => Promise.resolve(true) },
    ).startHeartbeats();
    return { timers, hold };
  };

  it('arms no deadline timer while it waits, and is judged by proven when it is about to be used', async () => {
    const { timers, hold } = held(0);
    expect(timers.pending).toEqual([]);
    expect(hold.proven).toBe(true);
    await timers.advance(LEASE_MS);
    expect(hold.proven).toBe(false);
    expect(hold.signal.aborted).toBe(false);
    // Watched from now on: already past its deadline, it is lost at once.
    hold.watchDeadline();
    expect(hold.signal.aborted).toBe(true);
    expect(hold.signal.reason).toBeInstanceOf(LostJobLeaseError);
  });

  it('keeps its lease by heartbeats while it waits; watched, its deadline runs from the last one', async () => {
    const { timers, hold } = held(HEARTBEAT_MS);
    await timers.advance(3 * LEASE_MS);
    expect(hold.proven).toBe(true);
    hold.watchDeadline();
    expect(timers.pending.length).toBeGreaterThan(1);
    expect(hold.signal.aborted).toBe(false);
    await hold.stop();
  });
});
