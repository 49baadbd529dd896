import { type AheadClaim, type ClaimOutcome, HeldClaim, LOST_CLAIM } from './held-claim';
import type { RunRegistry } from './run-registry';
import { lingering } from '../fleet/linger';
import type { JobDeclaration } from '../schedule/job-declaration';
import { holdClockOf, type SchedulerLease, type SchedulerLogger, type SchedulerTimers } from '../scheduler-ports';

/** How a claim is sent: ahead of its instant, over a FAIL row, under an owner token of its own, as a retry of a claim whose answer was lost. */
export interface ClaimOptions {
  ahead?: boolean;
  reclaimFailed?: boolean;
  ownerToken?: string;
  again?: boolean;
}

/**
 * The claim side of occurrences: claim a lease (held from its send instant), the claims won of
 * some outcomes, hand-over to the fleet of claims that will not start here, and the end of claims
 * that must not run. For the runner and for the parts that claim without running at once (claims
 * ahead, tenant batches, missed and unrun occurrences). A claim in flight is kept in the run
 * registry, so that shutdown waits for it; failures are logged one line per batch of them.
 */
export class OccurrenceClaims {
  /**
   * Hand-overs that failed within LINGER_MS of each other, logged as one line: the callers of one
   * batched statement fail together (up to 1,000 of them, a line each before).
   */
  private readonly handOverFailed = lingering<{ count: number; error: unknown }>((failures) => {
    const count = failures.reduce((sum, failure) => sum + failure.count, 0);
    const errors = new Set(failures.map((failure) => String(failure.error)));
    const others = errors.size > 1 ? ` (and ${errors.size - 1} other error(s))` : '';
    this.logger.warn(
      `Could not hand over ${count} claimed occurrence(s); they are taken over once their lease runs out: ${String(failures[0].error)}${others}`,
    );
  });

  /** Claims ahead that failed, logged as one line per batch of them (they are claimed again at their instant). */
  readonly aheadFailed = lingering<unknown>((errors) => {
    this.logger.warn(`${errors.length} occurrence(s) could not be claimed ahead (${String(errors[0])}); each is claimed again at its instant`);
  });

  constructor(
    private readonly lease: SchedulerLease,
    private readonly timers: SchedulerTimers,
    private readonly logger: SchedulerLogger,
    private readonly runs: RunRegistry,
  ) {}

  /** Claims an occurrence's lease now (one of a batch), as a value; a claim won is held from its send instant. */
  claim(job: JobDeclaration, runKey: string, correlationId: string, how: ClaimOptions = {}): Promise<ClaimOutcome> {
    const { ahead = false, reclaimFailed = false, ownerToken, again = false } = how;
    const options = { code: job.name, runKey, name: job.name, leaseMs: job.leaseMs, reclaimFailed, ownerToken };
    const clock = holdClockOf(this.timers);
    const sentAt = clock.now();
    const acquiring =
      ahead && this.lease.acquireAhead
        ? this.lease.acquireAhead(options)
        : again && this.lease.acquireAgain
          ? this.lease.acquireAgain(options)
          : this.lease.acquire(options);
    const outcome = acquiring.then(
      (lock): ClaimOutcome => (lock.acquired ? { kind: 'acquired', claim: new HeldClaim(this.lease, clock, lock, sentAt, correlationId) } : LOST_CLAIM),
      // The lock store cannot be reached: failed, rather than run on every instance.
      (error: unknown): ClaimOutcome => ({ kind: 'unavailable', error }),
    );
    this.runs.claiming(outcome);
    return outcome;
  }

  /** The claims won of these outcomes (waited for). */
  async won(claims: readonly AheadClaim[]): Promise<HeldClaim[]> {
    const outcomes = await Promise.all(claims.map((claim) => claim.outcome));
    return outcomes.flatMap((outcome) => (outcome.kind === 'acquired' && !outcome.claim.settled ? [outcome.claim] : []));
  }

  /**
   * Hands claims that will not start here over to the fleet (HeldClaim.handOver), in few
   * statements: how many were this instance's. A failure is logged: their leases then run out by
   * themselves and they are taken over all the same, one lease later.
   */
  async handOver(claims: readonly HeldClaim[]): Promise<number> {
    if (claims.length === 0) return 0;
    try {
      return (await HeldClaim.handOver(this.lease, claims)).filter(Boolean).length;
    } catch (error) {
      this.handOverFailed({ count: claims.length, error });
      return 0;
    }
  }

  /**
   * Ends claims that must not run (FAIL `data`: a paused, changed or removed schedule), each
   * retried within its lease: how many were this instance's.
   */
  async end(claims: readonly HeldClaim[], data: unknown): Promise<number> {
    const ended = await Promise.all(
      claims.map((claim) =>
        claim.end(data).catch((error: unknown) => {
          this.logger.warn(`Could not end a claimed occurrence (${JSON.stringify(data)}); it is taken over once its lease runs out: ${String(error)}`);
          return false;
        }),
      ),
    );
    return ended.filter(Boolean).length;
  }
}
