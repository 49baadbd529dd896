import { RELEASED_DATA } from '../job-scheduler.constants';
import { JobLeaseDatabaseError, LostJobLeaseError } from '../job-scheduler.errors';
import type { JobLeaseHold } from '../job-scheduler.types';
import { monotonicNow, provenUntil, retryDelayMs, statementTimeoutMs } from './lease-deadline';

/** The holder's clock: now, and a call after a delay (returns a function that cancels it). */
export interface HoldClock {
  now(): number;
  /**
   * The wall clock (ms), where there is one. A monotonic clock stops while the machine is
   * suspended, and the database's does not: the deadline is also checked against this one.
   */
  wallNow?(): number;
  /** `keepProcessAlive`: a wait the caller awaits (a retry), not a watchdog in the background. */
  after(delayMs: number, fn: () => void, keepProcessAlive?: boolean): () => void;
}

/** performance.now() and unreferenced Node timers: the work being protected keeps the process alive. */
export const monotonicClock: HoldClock = {
  now: monotonicNow,
  wallNow: () => Date.now(),
  after: (delayMs, fn, keepProcessAlive = false) => {
    const timer = setTimeout(fn, delayMs);
    if (!keepProcessAlive) timer.unref();
    return () => clearTimeout(timer);
  },
};

/** The statements a hold sends, each bounded by the timeout it is given. */
export interface HoldStatements {
  /** Checks finalize data before anything stops or is sent (throws a typed error); returns what finalize sends. */
  prepare?(data: unknown): unknown;
  heartbeat(timeoutMs: number): Promise<boolean>;
  /** complete or fail; `again` on a retry, where "already done by this owner" counts as applied. */
  finalize(outcome: 'complete' | 'fail', data: unknown, again: boolean, timeoutMs: number): Promise<boolean>;
}

export interface HoldSettings {
  leaseId: string;
  leaseMs: number;
  /** 0: no heartbeats (the lease must outlast the work). */
  heartbeatMs: number;
  /** The instant (on `clock`) until which the acquire proved the lease held. */
  heldUntil: number;
  /** The bound on one statement. */
  statementTimeoutMs: number;
  clock?: HoldClock;
  random?: () => number;
  /** Told of each failed attempt that will be retried (for a debug log). */
  onRetry?: (operation: string, error: unknown, attempt: number) => void;
}

/** A database failure a retry may fix (a timeout, a dropped connection, a serialization failure). */
export const isRetryable = (error: unknown): boolean => error instanceof JobLeaseDatabaseError && error.retryable;

/** What the hold's cancel functions are before a timer is armed: one function for every hold. */
const nothingToCancel = (): void => undefined;

/** The deadline timer wakes at least this often to compare both clocks (see HoldClock.wallNow). */
const DEADLINE_RECHECK_MS = 1_000;

/**
 * Keeps one acquired lease: heartbeats, a local deadline, and finalization with retries.
 *
 * The deadline is the holder's proof: the send instant of the last write the database confirmed
 * (acquire or heartbeat), plus the lease, minus a safety margin (lease-deadline.ts). Until then no
 * other node can take the run over; at that instant the signal aborts with LostJobLeaseError,
 * even while a heartbeat is still in flight or hung. A heartbeat that fails transiently is retried
 * with backoff and jitter until the deadline; only `false` (taken over), an error no retry can fix,
 * or the deadline aborts. Heartbeats are a chain of one-shot timers: they never overlap.
 */
export class LeaseHold implements JobLeaseHold {
  /**
   * Made on the first read of `signal` (an AbortController costs more than the rest of a run's
   * start, and most runs never read it); `aborted` keeps the first reason until then.
   */
  private controller: AbortController | undefined;
  private aborted: { reason: unknown } | undefined;
  private readonly clock: HoldClock;
  private until: number;
  /** The same deadline on the wall clock, when the hold's clock has one. */
  private wallUntil: number | undefined;
  private cancelBeat: () => void = nothingToCancel;
  private cancelDeadline: () => void = nothingToCancel;
  private inFlight: Promise<void> | undefined;
  private beating = false;
  private lastError: unknown;
  private lost = false;
  /** Whether the deadline timer runs (start, watchDeadline); a hold that only heartbeats is judged when asked (`proven`). */
  private watching = false;

  constructor(
    private readonly settings: HoldSettings,
    private readonly statements: HoldStatements,
  ) {
    this.clock = settings.clock ?? monotonicClock;
    this.until = settings.heldUntil;
    this.wallUntil = this.wallDeadline(this.until);
  }

  /** Aborts when the lease is lost, its deadline passes unrenewed, or the application shuts down. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.aborted.reason);
    }
    return this.controller.signal;
  }

  /** Whether the lease is provably held now: not lost, and its deadline not passed on either clock. */
  get proven(): boolean {
    return !this.lost && !this.deadlinePassed();
  }

  /** Until when (on the hold's clock: performance.now() by default) the lease is provably held. */
  get heldUntil(): number {
    return this.until;
  }

  /** Arms the deadline and starts heartbeats; a lease already past its deadline is lost at once. */
  start(): this {
    this.startHeartbeats();
    this.watchDeadline();
    return this;
  }

  /**
   * Heartbeats only, without the deadline timer: for a lease held while it waits to be used (a
   * scheduler's claim before its run starts), which is judged by `proven` when it is about to be
   * used. Thousands of claims waiting together then arm no timer that fires every second.
   */
  startHeartbeats(): this {
    if (this.settings.heartbeatMs > 0 && !this.beating && !this.lost) {
      this.beating = true;
      this.scheduleBeat(this.settings.heartbeatMs, 1);
    }
    return this;
  }

  /** Arms the deadline timer (after startHeartbeats); a lease already past its deadline is lost at once. */
  watchDeadline(): void {
    if (this.watching || this.lost) return;
    this.watching = true;
    if (this.deadlinePassed()) this.onDeadline();
    else this.armDeadline();
  }

  /**
   * Aborts the signal (a no-op once aborted: the first reason stays). Heartbeats go on: a run told
   * to stop (shutdown, its timeout) still holds its lease until it settles.
   */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = { reason };
    this.controller?.abort(reason);
  }

  /** The lease is gone or unprovable: no more heartbeats, and the signal says why. */
  private lose(reason: LostJobLeaseError): void {
    this.lost = true;
    this.stopBeating();
    this.cancelDeadline();
    this.abort(reason);
  }

  /** Stops heartbeats and waits for one in flight, so that none lands after finalization starts. */
  async stopHeartbeats(): Promise<void> {
    this.stopBeating();
    await this.inFlight;
  }

  /** Marks the run SUCCESS (see finalize). */
  complete(data?: unknown): Promise<boolean> {
    return this.finalize('complete', data);
  }

  /** Marks the run FAIL, immediately reclaimable (see finalize). */
  fail(data?: unknown): Promise<boolean> {
    return this.finalize('fail', data);
  }

  /** fail with `{ released: true }` by default: gives the run back. */
  release(data: unknown = RELEASED_DATA): Promise<boolean> {
    return this.finalize('fail', data);
  }

  /** Stops heartbeats and the deadline, without finalizing: the lease runs out by itself. */
  async stop(): Promise<void> {
    await this.stopHeartbeats();
    this.cancelDeadline();
  }

  /**
   * complete or fail the run, retrying transient failures until the deadline (a retry that finds
   * the run already finalized by this owner counts as applied). At least one attempt is made,
   * even past the deadline: finalization is fenced. Returns false when another owner took the run.
   */
  async finalize(outcome: 'complete' | 'fail', data?: unknown, lost?: () => LostJobLeaseError): Promise<boolean> {
    const prepared = this.statements.prepare ? this.statements.prepare(data) : data;
    await this.stopHeartbeats();
    try {
      for (let attempt = 1; ; attempt++) {
        let applied: boolean;
        try {
          applied = await this.statements.finalize(outcome, prepared, attempt > 1, this.settings.statementTimeoutMs);
        } catch (error) {
          const remaining = this.until - this.clock.now();
          if (!isRetryable(error) || remaining <= 0) throw error;
          this.settings.onRetry?.(outcome, error, attempt);
          await new Promise<void>((resolve) => this.clock.after(retryDelayMs(attempt, remaining, this.settings.random), resolve, true));
          if (this.clock.now() >= this.until) throw error;
          continue;
        }
        if (!applied) {
          const reason = `another owner took the run over before it ${outcome === 'complete' ? 'completed' : 'failed'}`;
          this.lose(lost?.() ?? new LostJobLeaseError(this.settings.leaseId, { reason }));
        }
        return applied;
      }
    } finally {
      this.cancelDeadline();
    }
  }

  private stopBeating(): void {
    this.beating = false;
    this.cancelBeat();
  }

  private wallDeadline(until: number): number | undefined {
    return this.clock.wallNow ? this.clock.wallNow() + (until - this.clock.now()) : undefined;
  }

  private deadlinePassed(): boolean {
    return this.clock.now() >= this.until || (this.wallUntil !== undefined && this.clock.wallNow!() >= this.wallUntil);
  }

  private armDeadline(): void {
    this.cancelDeadline();
    const remaining = Math.max(0, this.until - this.clock.now());
    const delay = this.clock.wallNow ? Math.min(remaining, DEADLINE_RECHECK_MS) : remaining;
    this.cancelDeadline = this.clock.after(delay, () => this.onDeadline());
  }

  private onDeadline(): void {
    // Not yet (a confirmed heartbeat may have moved the deadline, or this was a periodic check).
    if (!this.deadlinePassed()) {
      this.armDeadline();
      return;
    }
    const reason =
      this.lastError === undefined
        ? 'its local deadline passed before a heartbeat could renew it'
        : 'its local deadline passed while heartbeats could not reach the database';
    this.lose(new LostJobLeaseError(this.settings.leaseId, { reason, cause: this.lastError }));
  }

  private scheduleBeat(delayMs: number, attempt: number): void {
    if (!this.beating) return;
    this.cancelBeat = this.clock.after(delayMs, () => {
      this.inFlight = this.beat(attempt);
    });
  }

  private async beat(attempt: number): Promise<void> {
    const sentAt = this.clock.now();
    const wallSentAt = this.clock.wallNow?.();
    const timeoutMs = statementTimeoutMs(this.settings.statementTimeoutMs, {
      heartbeatMs: this.settings.heartbeatMs,
      deadline: this.until,
      now: sentAt,
    });
    let owned: boolean;
    try {
      owned = await this.statements.heartbeat(timeoutMs);
    } catch (error) {
      if (!this.beating) return;
      this.lastError = error;
      if (!isRetryable(error)) {
        this.lose(new LostJobLeaseError(this.settings.leaseId, { reason: 'a heartbeat failed with an error a retry cannot fix', cause: error }));
        return;
      }
      this.settings.onRetry?.('heartbeat', error, attempt);
      const remaining = this.until - this.clock.now();
      if (remaining > 0) this.scheduleBeat(retryDelayMs(attempt, remaining, this.settings.random), attempt + 1);
      return;
    }
    if (!owned) {
      if (this.beating) this.lose(new LostJobLeaseError(this.settings.leaseId, { reason: 'another owner took the run over' }));
      return;
    }
    this.lastError = undefined;
    if (!this.lost) {
      const proven = provenUntil(sentAt, this.settings.leaseMs);
      if (proven > this.until) {
        // On the wall clock too, from the same send instant.
        const wallProven = this.clock.wallNow ? wallSentAt! + (proven - sentAt) : undefined;
        this.until = proven;
        this.wallUntil = wallProven;
      }
      if (this.watching) this.armDeadline();
    }
    this.scheduleBeat(this.settings.heartbeatMs, 1);
  }
}
