import { JobShutdownError } from '../job-scheduler/job-scheduler.errors';
import type { AheadClaim, OccurrenceRunner } from './occurrence-runner';
import type { RunRecords } from './run-records';
import type { JobDeclaration } from './schedule/job-declaration';
import type { SchedulerLogger } from './scheduler-ports';
import { schedulingErrors } from './scheduling.errors';
import type { JobRunRecord } from './scheduling.types';

/** The longest claimAheadMs: a claim ahead holds its lease unheartbeated until the run starts. */
const MAX_CLAIM_AHEAD_MS = 60_000;

/** A job as the claims ahead see it: its declaration, and the claim it holds (on the engine's job state). */
export interface AheadClaimHolder {
  job: { declaration: JobDeclaration };
  ahead?: AheadClaim;
}

/** What every record of a job says: its name, and its dynamic schedule's id if it is one. */
export const recordOfJob = ({ name, dynamicSchedule }: JobDeclaration): Pick<JobRunRecord, 'name' | 'scheduleId'> =>
  dynamicSchedule ? { name, scheduleId: dynamicSchedule.id } : { name };

/**
 * The occurrences claimed `claimAheadMs` before their instant: when a job's next instant is
 * claimed, the claim handed to its run (once), and the claims given back (FAIL `{ released }`)
 * when they will not run, or handed over to the other instances on shutdown.
 */
export class AheadClaims {
  constructor(
    private readonly aheadMs: number,
    private readonly runner: OccurrenceRunner,
    private readonly records: RunRecords,
    private readonly logger: SchedulerLogger,
    /** Keeps a release in the engine's work in flight (idle(), stop()). */
    private readonly track: <T>(work: Promise<T>) => Promise<T>,
  ) {
    if (!Number.isSafeInteger(aheadMs) || aheadMs < 0 || aheadMs > MAX_CLAIM_AHEAD_MS) {
      throw schedulingErrors.invalidOption('claimAheadMs', `a whole number of ms from 0 to ${MAX_CLAIM_AHEAD_MS}`, aheadMs);
    }
  }

  /** Whether the job's occurrences are claimed ahead: global jobs that skip overlapping occurrences. */
  appliesTo({ tenancy, overlap, leaseMs }: JobDeclaration): boolean {
    // The lease runs from the claim: a quarter of it at most goes by before the run starts.
    return this.aheadMs > 0 && 4 * this.aheadMs <= leaseMs && tenancy === 'global' && overlap === 'skip';
  }

  /**
   * When to claim the job's instant `next` (now at the latest), or null: claimed at the instant.
   * Ahead only when the claims, spread over half the time ahead, can end before the instant with
   * half a second to spare: a job more frequent than that is claimed at its instants.
   */
  claimTime(holder: AheadClaimHolder, next: number, now: number): number | null {
    const claimAt = Math.max(next - this.aheadMs, now);
    if (this.aheadMs === 0 || next - claimAt < this.aheadMs / 2 + 500 || !this.appliesTo(holder.job.declaration)) return null;
    return claimAt;
  }

  /** Claims the job's instant `next` now (at its claim time). */
  claim(holder: AheadClaimHolder, next: number, now: number): void {
    // A claim of an instant still to come is kept (a changed schedule's); this one is claimed at its instant.
    if (holder.ahead && (holder.ahead.scheduledAt === next || holder.ahead.scheduledAt > now)) return;
    // Reached after its instant (a stalled event loop): handled at its timer, unclaimed. A claim
    // now would leave a row for an occurrence that may be missed, hiding it from the report.
    if (next <= now) return;
    void this.release([holder], 'not run');
    holder.ahead = this.runner.claimAhead(holder.job.declaration, next);
  }

  /** The lease claimed ahead for this occurrence, handed to its run (once). */
  take(holder: AheadClaimHolder, scheduledAt: number): AheadClaim | undefined {
    const ahead = holder.ahead;
    if (ahead?.scheduledAt !== scheduledAt) return undefined;
    holder.ahead = undefined;
    return ahead;
  }

  /**
   * Gives back the leases these jobs claimed ahead, which will not run. On shutdown they are
   * handed over instead, where the lease can (PostgreSQL): left RUNNING with their lease run out,
   * so that another instance's take-over scan runs them; else given back and recorded failed
   * JOB_SHUTDOWN.
   */
  release(holders: readonly AheadClaimHolder[], reason: string, shutdown = false): Promise<void> {
    const released = holders.flatMap((holder) => {
      const ahead = holder.ahead;
      holder.ahead = undefined;
      return ahead ? [{ ahead, job: recordOfJob(holder.job.declaration) }] : [];
    });
    if (released.length === 0) return Promise.resolve();
    const claims = released.map(({ ahead }) => ahead);
    const handedOver = shutdown ? this.runner.handOverAhead(claims) : Promise.resolve(null);
    return this.track(
      handedOver.then(async (handed) => {
        if (handed) {
          const count = handed.filter(Boolean).length;
          if (count > 0) this.logger.warn(`${count} occurrence(s) claimed ahead were handed over unrun on shutdown: another instance's take-over scan runs them`);
          return;
        }
        const held = await this.runner.releaseAhead(claims, reason);
        if (!shutdown) return;
        let count = 0;
        released.forEach(({ ahead, job }, index) => {
          if (!held[index]) return;
          count++;
          const scheduledAt = new Date(ahead.scheduledAt);
          const error = new JobShutdownError(ahead.correlationId);
          this.records.emit({ ...job, outcome: 'failed', scheduledAt, trigger: 'schedule', correlationId: ahead.correlationId, errorCode: 'JOB_SHUTDOWN', error }, false);
        });
        if (count > 0) this.logger.warn(`${count} occurrence(s) claimed ahead were given back unrun on shutdown (recorded failed JOB_SHUTDOWN)`);
      }),
    );
  }
}
