import { randomUuid } from '../../job-scheduler/random-uuid';
import type { AheadClaim } from './held-claim';
import { runKeyOf } from './occurrence-keys';
import { fractionOf } from '../fleet/random-walk';
import type { OccurrenceRunner } from './occurrence-runner';
import type { JobDeclaration } from '../schedule/job-declaration';
import type { SchedulerLogger } from '../scheduler-ports';
import { schedulingErrors } from '../scheduling.errors';
import type { JobRunRecord } from '../scheduling.types';

/** The longest claimAheadMs: a claim ahead holds its lease unheartbeated until the run starts. */
const MAX_CLAIM_AHEAD_MS = 60_000;

/**
 * Each instance claims an instant ahead up to this much after its lead, at an offset of its own
 * for that instant (within the time the lead has to spare, see AheadClaims.claimTime). Claimed at
 * the same millisecond, instances raced inside the unique index: a loser that got past the
 * insert's guard drew a fencing token value, and one that got past ON CONFLICT's pre-check also
 * wrote its row and index entries before taking them back (32 instances in one process, 18
 * instants: 11 such rows; staggered over 100 ms, 3; over 1 s, none). Staggered, a loser finds the
 * winner's row committed and writes nothing.
 */
export const MAX_CLAIM_STAGGER_MS = 500;

/**
 * Claims ahead, unless set: this much lead per job that can be due at one instant. Measured (50,000
 * schedules due together, 3 instances and PostgreSQL on 2 cores): claimed 3 s ahead, 13 % of the
 * claims were in before the instant (start delay p99 15.4 s); 7.5 s ahead, all of them (p99 3.7 s).
 */
export const CLAIM_AHEAD_PER_JOB_MS = 0.15;

/**
 * The lead of claims ahead when the application did not set claimAheadMs: the default, or more
 * when many jobs can be due together (CLAIM_AHEAD_PER_JOB_MS each), at most MAX_CLAIM_AHEAD_MS. A
 * job is claimed at most a quarter of its lease ahead (see AheadClaims.leadFor).
 */
export const scaledClaimAheadMs = (defaultMs: number, jobs: number): number =>
  defaultMs === 0 ? 0 : Math.min(MAX_CLAIM_AHEAD_MS, Math.max(defaultMs, Math.ceil(jobs * CLAIM_AHEAD_PER_JOB_MS)));

/** A job as the claims ahead see it: its declaration, the claim it holds and its runs in progress (on the engine's job state). */
export interface AheadClaimHolder {
  job: { declaration: JobDeclaration };
  ahead?: AheadClaim;
  /** Handlers of this job running on this instance now (see JobOccupancy). */
  occupancy: { readonly running: number };
}

/** What every record of a job says: its name, and its dynamic schedule's id if it is one. */
export const recordOfJob = ({ name, dynamicSchedule }: JobDeclaration): Pick<JobRunRecord, 'name' | 'scheduleId'> =>
  dynamicSchedule ? { name, scheduleId: dynamicSchedule.id } : { name };

/**
 * The record of an occurrence whose claim ahead another instance won: skipped-locked. recordOfJob's
 * fields written out rather than spread in (most occurrences due together end so on every instance).
 */
export const lostAheadRecord = (
  { name, dynamicSchedule }: JobDeclaration,
  scheduledAt: number,
  trigger: JobRunRecord['trigger'],
  { correlationId }: AheadClaim,
): JobRunRecord => {
  const outcome = 'skipped-locked';
  return dynamicSchedule
    ? { name, scheduleId: dynamicSchedule.id, outcome, scheduledAt: new Date(scheduledAt), trigger, correlationId }
    : { name, outcome, scheduledAt: new Date(scheduledAt), trigger, correlationId };
};

/** A claim ahead this instance ended unrun: its instant and code, and whether the end applied. */
interface Released {
  scheduledAt: number;
  code: string;
  ended: Promise<boolean>;
}

/** Releases of removed jobs kept for a job created again under the same key. */
const MAX_RELEASES_OF_REMOVED = 10_000;

/**
 * The occurrences claimed `claimAheadMs` before their instant: when a job's next instant is
 * claimed, the claim handed to its run (once), and the claims that will not run here: ended with
 * their reason when the occurrence must not run (a paused, changed or removed schedule), handed
 * over to the other instances on shutdown.
 */
export class AheadClaims {
  /**
   * The claim each job last ended unrun (release), and whether this instance's end applied: a job
   * resumed (or changed back) before that instant claims it again over the row it ended, which
   * no claim takes otherwise (a row ended FAIL is final).
   */
  private readonly released = new WeakMap<AheadClaimHolder, Released>();
  /**
   * The last release of each job removed (a dynamic schedule), by its job key, for a job created
   * again under that key before that instant: it claims it again as a resumed job does. Bounded:
   * the oldest are forgotten past MAX_RELEASES_OF_REMOVED.
   */
  private readonly releasedOfRemoved = new Map<string, Released>();
  private readonly staggerSeed: number;

  constructor(
    private readonly aheadMs: number,
    private readonly runner: OccurrenceRunner,
    private readonly logger: SchedulerLogger,
    /** Keeps a release in the engine's work in flight (idle(), stop()). */
    private readonly track: <T>(work: Promise<T>) => Promise<T>,
    /** The lead now (aheadMs, or more: see scaledClaimAheadMs); aheadMs when absent. */
    readonly lead: () => number = () => aheadMs,
    /** Draws this instance's stagger seed (see MAX_CLAIM_STAGGER_MS). */
    random: () => number = Math.random,
  ) {
    this.staggerSeed = Math.floor(random() * 2 ** 32) | 0;
    if (!Number.isSafeInteger(aheadMs) || aheadMs < 0 || aheadMs > MAX_CLAIM_AHEAD_MS) {
      throw schedulingErrors.invalidOption('claimAheadMs', `a whole number of ms from 0 to ${MAX_CLAIM_AHEAD_MS}`, aheadMs);
    }
  }

  /** Whether the job's occurrences are claimed ahead: global jobs that skip overlapping occurrences. */
  appliesTo({ tenancy, overlap, leaseMs }: JobDeclaration): boolean {
    // The lease runs from the claim: a quarter of it at most goes by before the run starts.
    return this.aheadMs > 0 && 4 * this.aheadMs <= leaseMs && tenancy === 'global' && overlap === 'skip';
  }

  /** How long before its instant the job's occurrence is claimed: the lead, within a quarter of its lease. */
  leadFor({ leaseMs }: JobDeclaration): number {
    return Math.max(this.aheadMs, Math.min(this.lead(), Math.floor(leaseMs / 4)));
  }

  /**
   * When to claim the job's instant `next` (now at the latest), or null: claimed at the instant.
   * Ahead only when the claims, spread over half the time ahead, can end before the instant with
   * half a second to spare: a job more frequent than that is claimed at its instants. A claim at
   * its lead is staggered within the time to spare beyond that (up to MAX_CLAIM_STAGGER_MS), by
   * the same offset for every job due at `next` on this instance, so that they are still claimed
   * together.
   */
  claimTime(holder: AheadClaimHolder, next: number, now: number): number | null {
    if (!this.appliesTo(holder.job.declaration)) return null;
    const leadMs = this.leadFor(holder.job.declaration);
    const claimAt = Math.max(next - leadMs, now);
    const spare = next - claimAt - (leadMs / 2 + 500);
    // Too close to claim ahead, unless this instance released it (only a claim ahead takes it again).
    if (spare < 0) return this.releasedOf(holder)?.scheduledAt === next ? now : null;
    // Armed within its lead (at boot, or a job added): claimed now.
    if (claimAt === now) return now;
    return claimAt + Math.floor(fractionOf(this.staggerSeed, next) * Math.min(MAX_CLAIM_STAGGER_MS, spare));
  }

  /** Claims the job's instant `next` now (at its claim time). */
  claim(holder: AheadClaimHolder, next: number, now: number): void {
    // A claim of an instant still to come is kept (a changed schedule's); this one is claimed at its instant.
    if (holder.ahead && (holder.ahead.scheduledAt === next || holder.ahead.scheduledAt > now)) return;
    // Reached after its instant (a stalled event loop): handled at its timer, unclaimed. A claim
    // now would leave a row for an occurrence that may be missed, hiding it from the report.
    if (next <= now) return;
    // Busy with the job's previous run: an idle instance claims it (this one would skip it).
    if (holder.occupancy.running > 0) return;
    if (holder.ahead) void this.handOver([holder]);
    const released = this.releasedOf(holder);
    this.released.delete(holder);
    holder.ahead = this.claimAhead(holder.job.declaration, next, released?.scheduledAt === next ? released.ended : undefined);
  }

  /** The instant whose claim this job last ended unrun here, if it is at or before `until` (its row hides it from a catch-up). */
  releasedBy(holder: AheadClaimHolder, until: number): number | undefined {
    const scheduledAt = this.releasedOf(holder)?.scheduledAt;
    return scheduledAt !== undefined && scheduledAt <= until ? scheduledAt : undefined;
  }

  /** The claim this job last ended unrun here, if its row is the job's (not under a name it had before). */
  private releasedOf(holder: AheadClaimHolder): { scheduledAt: number; ended: Promise<boolean> } | undefined {
    const released = this.released.get(holder);
    return released?.code === holder.job.declaration.name ? released : undefined;
  }

  /**
   * The lease claimed ahead for this occurrence, handed to its run (once); for an occurrence
   * whose claim this instance ended unrun (a job enabled again catching it up), claimed again
   * over the row it ended.
   */
  take(holder: AheadClaimHolder, scheduledAt: number): AheadClaim | undefined {
    const ahead = holder.ahead;
    if (ahead?.scheduledAt !== scheduledAt) {
      const released = this.releasedOf(holder);
      if (released?.scheduledAt !== scheduledAt) return undefined;
      this.released.delete(holder);
      return this.claimAhead(holder.job.declaration, scheduledAt, released.ended);
    }
    holder.ahead = undefined;
    return ahead;
  }

  /**
   * Ends the claims these jobs hold, whose occurrences must not run (a paused, changed or removed
   * schedule): FAIL `{ released: true, reason }`, visible as such.
   */
  release(holders: readonly AheadClaimHolder[], reason: string): Promise<void> {
    const ends = holders.flatMap((holder) => {
      const [claim] = this.detach([holder]);
      if (!claim) return [];
      const ended = this.runner.claims.won([claim]).then(async (won) => (await this.runner.claims.end(won, { released: true, reason })) > 0);
      this.released.set(holder, { scheduledAt: claim.scheduledAt, code: claim.code, ended });
      return [ended];
    });
    if (ends.length === 0) return Promise.resolve();
    return this.track(Promise.all(ends).then(() => undefined));
  }

  /** A job removed under `key`: its last release stays known under the key (see adopt). */
  forget(holder: AheadClaimHolder, key: string): void {
    const released = this.released.get(holder);
    if (!released) return;
    this.releasedOfRemoved.delete(key);
    this.releasedOfRemoved.set(key, released);
    if (this.releasedOfRemoved.size > MAX_RELEASES_OF_REMOVED) this.releasedOfRemoved.delete(this.releasedOfRemoved.keys().next().value as string);
  }

  /**
   * A job created under `key`: the release of the job removed under it becomes its own, so that a
   * schedule removed and created again before the instant whose claim its removal ended claims
   * that instant again (under the same code only: see releasedOf).
   */
  adopt(holder: AheadClaimHolder, key: string): void {
    const released = this.releasedOfRemoved.get(key);
    if (!released) return;
    this.releasedOfRemoved.delete(key);
    this.released.set(holder, released);
  }

  /**
   * Hands the claims these jobs hold over to the fleet (on shutdown, or a claim this instance will
   * not start): left RUNNING with their lease run out, so that another instance's take-over scan
   * runs them.
   */
  handOver(holders: readonly AheadClaimHolder[], why = 'shutdown'): Promise<void> {
    return this.handOverClaims(this.detach(holders), why);
  }

  /** The same, for claims already taken from their jobs (by a run waiting for its jitter, say). */
  handOverClaims(claims: readonly AheadClaim[], why = 'shutdown'): Promise<void> {
    if (claims.length === 0) return Promise.resolve();
    return this.track(
      this.runner.claims.won(claims).then(async (won) => {
        const count = await this.runner.claims.handOver(won);
        if (count > 0) this.logger.log(`${count} occurrence(s) claimed ahead were handed over unrun (${why}): the take-over scan of an instance runs them`);
      }),
    );
  }

  /**
   * Asks for the occurrence's lease now, ahead of its due instant (the claims of many occurrences
   * go out together, off the path of their start): the runner's `run({ ahead })` at the due instant uses it.
   * A claim won is held from then (see HeldClaim).
   */
  private claimAhead(job: JobDeclaration, scheduledAt: number, reclaim?: Promise<boolean>): AheadClaim {
    const runKey = runKeyOf({ scheduleId: job.dynamicSchedule?.id }, scheduledAt);
    const correlationId = randomUuid();
    const ownerToken = randomUuid();
    // `reclaim`: this instance ended the occurrence's row unrun (a pause lifted since): once that
    // end is done, a row it ended (true) is claimed over its FAIL.
    const outcome = reclaim
      ? reclaim.then((ended) => {
          // Claimed again at the instant if this claim fails (see OccurrenceRunner.run): over the same row.
          if (ended) claim.reclaimFailed = true;
          return this.runner.claims.claim(job, runKey, correlationId, { ahead: true, reclaimFailed: ended, ownerToken });
        })
      : this.runner.claims.claim(job, runKey, correlationId, { ahead: true, ownerToken });
    const claim: AheadClaim = { scheduledAt, code: job.name, correlationId, ownerToken, outcome };
    void claim.outcome.then((outcome) => (claim.settled = outcome));
    return claim;
  }

  private detach(holders: readonly AheadClaimHolder[]): AheadClaim[] {
    return holders.flatMap((holder) => {
      const ahead = holder.ahead;
      holder.ahead = undefined;
      return ahead ? [ahead] : [];
    });
  }
}
