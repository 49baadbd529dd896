import type { JobAcquiredLease, JobLease } from '../../job-scheduler/job-scheduler.types';
import { DEFAULT_STATEMENT_TIMEOUT_MS, provenUntil } from '../../job-scheduler/run/lease-deadline';
import { type HoldClock, type HoldStatements, LeaseHold } from '../../job-scheduler/run/lease-hold';
import type { SchedulerLease } from '../scheduler-ports';

/** What a claim of an occurrence came to: won (and held from then), another instance has it, or the store could not say. */
export type ClaimOutcome = { kind: 'acquired'; claim: HeldClaim } | { kind: 'lost' } | { kind: 'unavailable'; error: unknown };

/** The outcome of every claim another instance won (most claims of occurrences due together, kept until their instant). */
export const LOST_CLAIM: ClaimOutcome = Object.freeze({ kind: 'lost' });

/** An occurrence's lease asked for ahead of its due instant (claimAheadMs), and what came of it. */
export interface AheadClaim {
  scheduledAt: number;
  /** The code its row is under (its job's name when claimed). */
  code: string;
  correlationId: string;
  /**
   * The owner token the claim named (drawn here): if its answer is lost, the claim at the instant
   * names it again and gets back the run it may have won. A secret, like every owner token.
   */
  ownerToken: string;
  outcome: Promise<ClaimOutcome>;
  /** The outcome once it is known. */
  settled?: ClaimOutcome;
  /** Claims over a FAIL row this instance ended unrun (a schedule paused and resumed before its instant). */
  reclaimFailed?: boolean;
}

/** Whether a held claim may start its handler now: held (proven), taken over by another owner, or unprovable. */
export type ClaimProof = { kind: 'held' } | { kind: 'lost' } | { kind: 'unavailable'; error: unknown };

/** A lease claimed for a run before the run (the take-over scan's batch), and the instant (on the runner's clock) its claim was sent. */
export interface OccurrenceClaim {
  lock: JobAcquiredLease;
  sentAt: number;
  correlationId: string;
}

/**
 * The statements of a claim's hold, through the scheduler's lease port: an object of one class
 * rather than two closures and their scope for every claim (thousands are held together).
 */
class ClaimStatements implements HoldStatements {
  constructor(
    private readonly port: SchedulerLease,
    private readonly lease: JobLease,
  ) {}

  heartbeat(timeoutMs: number): Promise<boolean> {
    return this.port.heartbeat(this.lease, { timeoutMs });
  }

  finalize(outcome: 'complete' | 'fail', data: unknown, again: boolean): Promise<boolean> {
    const options = again ? { again } : undefined;
    return outcome === 'complete' ? this.port.complete(this.lease, data, options) : this.port.fail(this.lease, data, options);
  }
}

/**
 * A won claim of one occurrence (for one tenant), held from the moment it was won: its local
 * deadline runs from the claim's send instant and heartbeats keep it while it waits to start
 * (the time claimed ahead, jitter, a tenant's queue); the deadline is judged when it is about to
 * start (`prove`), and watched by a timer only from then. It ends exactly one way: started (the run
 * finalizes it through `hold`), handed over to the fleet (left RUNNING with its lease run out, for
 * a take-over elsewhere), or ended unrun with a reason (FAIL with data that says why).
 */
export class HeldClaim {
  readonly lease: JobLease;
  /** The hold of this claim: from the claim until the run's finalization. Replaced when `prove` renews it. */
  hold: LeaseHold;
  private ended = false;
  /** What every hold of this claim sends (the first, and the one `prove` renews). */
  private readonly statements: ClaimStatements;

  constructor(
    private readonly port: SchedulerLease,
    private readonly clock: HoldClock,
    readonly lock: JobAcquiredLease,
    /** When the claim was sent, on `clock`: the lease is proven from there. */
    sentAt: number,
    readonly correlationId: string,
  ) {
    this.lease = { id: lock.id, ownerToken: lock.ownerToken };
    this.statements = new ClaimStatements(port, this.lease);
    this.hold = this.holdFrom(sentAt);
  }

  /** Whether this claim has been started, handed over or ended (each claim ends once). */
  get settled(): boolean {
    return this.ended;
  }

  /**
   * Proves the claim held right before its handler starts. Held by its deadline: yes, without a
   * statement. Past it (the process stalled, the wait outlasted a heartbeat that failed): one
   * fenced heartbeat decides. A run never starts on a lease another owner may hold.
   */
  async prove(): Promise<ClaimProof> {
    if (this.hold.proven) return { kind: 'held' };
    await this.hold.stop();
    const sentAt = this.clock.now();
    let owned: boolean;
    try {
      owned = await this.port.heartbeat(this.lease, { timeoutMs: DEFAULT_STATEMENT_TIMEOUT_MS });
    } catch (error) {
      return { kind: 'unavailable', error };
    }
    if (!owned) return { kind: 'lost' };
    this.hold = this.holdFrom(sentAt);
    return this.hold.proven
      ? { kind: 'held' }
      : { kind: 'unavailable', error: new Error('the heartbeat that proved the claim answered after the lease it proved') };
  }

  /** The claim's run starts: from now on its deadline is watched (the signal aborts at it) and its run finalizes it (hold.complete / hold.fail). */
  start(): void {
    this.ended = true;
    this.hold.watchDeadline();
  }

  /**
   * Ends the claim unrun with FAIL `data` (a missed occurrence, a paused or removed schedule):
   * retried within the lease. Whether this owner ended it (false: another owner had it).
   */
  async end(data: unknown): Promise<boolean> {
    this.ended = true;
    return this.hold.fail(data);
  }

  /**
   * Hands these claims over to the fleet unrun (a shutdown, an overlap on this instance): each row
   * stays RUNNING with its lease run out now and marked handed over, so that another instance's
   * take-over scan runs it. In one statement per 1,000 where the lease can (expireMany); without
   * it, their holds stop and the leases run out by themselves. Whether each was this owner's.
   */
  static async handOver(port: SchedulerLease, claims: readonly HeldClaim[]): Promise<boolean[]> {
    for (const claim of claims) claim.ended = true;
    await Promise.all(claims.map((claim) => claim.hold.stop()));
    if (claims.length === 0) return [];
    if (!port.expireMany) return claims.map(() => true);
    return port.expireMany(claims.map((claim) => claim.lease));
  }

  private holdFrom(sentAt: number): LeaseHold {
    const { lock, lease } = this;
    return new LeaseHold(
      {
        leaseId: lease.id,
        leaseMs: lock.leaseMs,
        heartbeatMs: lock.heartbeatMs,
        heldUntil: provenUntil(sentAt, lock.leaseMs),
        statementTimeoutMs: DEFAULT_STATEMENT_TIMEOUT_MS,
        clock: this.clock,
      },
      this.statements,
    ).startHeartbeats();
  }
}
