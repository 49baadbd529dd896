import { randomUuid } from '../../job-scheduler/random-uuid';
import { type AheadClaimHolder, type AheadClaims, recordOfJob } from './ahead-claims';
import type { AheadClaim, HeldClaim } from './held-claim';
import { runKeyOf, tenantIdProblem } from './occurrence-keys';
import type { OccurrenceRunner } from './occurrence-runner';
import { unrecordedInstants } from './recorded-occurrences';
import type { RunRecords } from '../records/run-records';
import type { DueSince } from '../schedule/due-instants';
import { jobKeyOf } from '../schedule/job-declaration';
import type { SchedulerHistory, SchedulerLogger, SchedulerTimers } from '../scheduler-ports';
import type { JobExecution, JobRunRecord } from '../scheduling.types';

export interface UnrunOccurrencesOptions {
  runner: OccurrenceRunner;
  ahead: AheadClaims;
  records: RunRecords;
  timers: SchedulerTimers;
  logger: SchedulerLogger;
  history?: SchedulerHistory;
  lateToleranceMs: number;
  /** Keeps work in the engine's work in flight (idle(), stop()). */
  track: <T>(work: Promise<T>) => Promise<T>;
  /** Whether this job is still the engine's (not removed or replaced). */
  current: (holder: AheadClaimHolder) => boolean;
  /** The tenants the directory lists now (a per-tenant job's occurrence has a lease per tenant). */
  listTenants?: () => Promise<readonly unknown[]>;
}

/**
 * Every way an occurrence that does not run here ends, written once: never silently. A claim
 * held for it is handed over to the fleet (another instance runs it), or ended with the reason
 * it must not run (FAIL `{ outcome }`: missed, skipped as overlapping everywhere), and the
 * occurrences nobody ran are reported missed by the one instance that holds their record.
 */
export class UnrunOccurrences {
  /** The occurrences skipped here as overlapping whose check is pending, by their timer's cancel. */
  private readonly overlapChecks = new Map<() => void, { holder: AheadClaimHolder; scheduledAt: number }>();

  constructor(private readonly options: UnrunOccurrencesOptions) {}

  /**
   * An occurrence due while this instance still runs the job's previous one, skipped here: a claim
   * ahead of it is handed over to the fleet; else an idle instance claims it. Should every instance
   * be busy, nobody would: one lateness tolerance later, whoever finds it still unclaimed records
   * it (FAIL `{ outcome: 'skipped-overlap' }`, a WARN line; each tenant's lease for a per-tenant
   * job), so that it is never lost without a word.
   * (Not sooner: an instance that reaches it late, within the tolerance, may still run it.)
   */
  async skippedOverlap(holder: AheadClaimHolder, scheduledAt: number, trigger: JobExecution['trigger']): Promise<JobRunRecord> {
    const { runner, ahead, timers, records, lateToleranceMs } = this.options;
    const declaration = holder.job.declaration;
    const claimed = trigger === 'schedule' || trigger === 'catch-up' ? ahead.take(holder, scheduledAt) : undefined;
    if (claimed) {
      await runner.claims.handOver(await runner.claims.won([claimed]));
    } else if (trigger === 'schedule') {
      const cancel = timers.at(scheduledAt + lateToleranceMs + 1_000, () => {
        this.overlapChecks.delete(cancel);
        if (this.options.current(holder)) void this.options.track(this.recordIfUnclaimed(holder, scheduledAt));
      });
      this.overlapChecks.set(cancel, { holder, scheduledAt });
    }
    return records.emit({ ...recordOfJob(declaration), outcome: 'skipped-overlap', scheduledAt: new Date(scheduledAt), trigger });
  }

  /** A claim of an instant this instance passed without running it (it stalled past the next one): recorded missed. */
  async passedClaim(holder: AheadClaimHolder, passed: AheadClaim): Promise<void> {
    const { runner, records } = this.options;
    const [claim] = await runner.claims.won([passed]);
    if (!claim) return;
    if ((await runner.claims.end([claim], { outcome: 'missed', missed: 1 })) > 0) records.missed(recordOfJob(holder.job.declaration), [passed.scheduledAt], 1);
  }

  /**
   * The latest due instant reached too late to run (and the ones before it): whoever takes its
   * lease (claimed ahead, else now, with the job's lease) records it FAIL `{ outcome: 'missed' }`,
   * its write retried within the lease, so that it is reported once, by one instance, and never
   * run or reported again.
   */
  async dropped(holder: AheadClaimHolder, due: DueSince & { latest: number }): Promise<void> {
    const { runner, ahead, logger, records } = this.options;
    const declaration = holder.job.declaration;
    const claimedAhead = ahead.take(holder, due.latest);
    try {
      const runKey = runKeyOf({ scheduleId: declaration.dynamicSchedule?.id }, due.latest);
      const claimed = await (claimedAhead?.outcome ?? runner.claims.claim(declaration, runKey, randomUuid()));
      if (claimed.kind === 'unavailable') throw claimed.error;
      if (claimed.kind === 'lost') return;
      await claimed.claim.end({ outcome: 'missed', missed: due.count });
    } catch (error) {
      logger.warn(`Could not record missed occurrences of ${declaration.name}: ${String(error)}`);
    }
    const missed = await this.unrecorded(holder, due.earlier);
    records.missed(recordOfJob(declaration), [...missed, due.latest], due.count - (due.earlier.length - missed.length));
  }

  /** The instants before a latest one this instance ran or recorded: those no instance recorded are reported missed. */
  async before(holder: AheadClaimHolder, due: DueSince): Promise<void> {
    const missed = await this.unrecorded(holder, due.earlier);
    this.options.records.missed(recordOfJob(holder.job.declaration), missed, due.count - 1 - (due.earlier.length - missed.length));
  }

  /**
   * On stop, the occurrences skipped here whose check is pending: those nobody claimed are handed
   * over to the fleet (claimed and left with their lease run out: another instance runs them,
   * at its take-over scan, or at the instant if this instance's clock ran ahead), so that they
   * are not lost with this instance. Before the lease's connections close.
   */
  async stop(): Promise<void> {
    const { runner, logger } = this.options;
    const pending = [...this.overlapChecks];
    this.overlapChecks.clear();
    for (const [cancel] of pending) cancel();
    const claims = await Promise.all(
      pending
        .filter(([, { holder }]) => this.options.current(holder))
        .map(async ([, { holder, scheduledAt }]) => {
          const { claims, failure } = await this.claimUnclaimed(holder, scheduledAt);
          if (failure === undefined) return claims;
          logger.warn(
            `Could not hand over ${holder.job.declaration.name} @ ${new Date(scheduledAt).toISOString()}, skipped here as overlapping: ${String(failure.error)}`,
          );
          return [];
        }),
    );
    const count = await runner.claims.handOver(claims.flat());
    if (count > 0)
      logger.log(`${count} occurrence(s) skipped here as overlapping, unclaimed, were handed over (shutdown): the take-over scan of an instance runs them`);
  }

  /** Records an occurrence skipped as overlapping that no instance claimed (see skippedOverlap). */
  private async recordIfUnclaimed(holder: AheadClaimHolder, scheduledAt: number): Promise<void> {
    const { logger } = this.options;
    const declaration = holder.job.declaration;
    const instant = new Date(scheduledAt).toISOString();
    try {
      const { claims, failure } = await this.claimUnclaimed(holder, scheduledAt);
      const ended = await Promise.all(claims.map((claim) => claim.end({ outcome: 'skipped-overlap' })));
      const recorded = ended.filter(Boolean).length;
      if (recorded > 0) {
        const tenants = declaration.tenancy === 'per-tenant' ? ` for ${recorded} tenant(s)` : '';
        logger.warn(
          `${declaration.name} @ ${instant} did not run${tenants}: every instance that reached it was still running the previous occurrence (overlap 'skip')`,
        );
      }
      if (failure) throw failure.error;
    } catch (error) {
      logger.warn(`Could not check whether ${declaration.name} @ ${instant} ran somewhere: ${String(error)}`);
    }
  }

  /**
   * Claims the leases of an occurrence that nobody claimed: its one key, or for a per-tenant job
   * one per tenant the directory lists now (those a key can name, as the fan-out takes them).
   * The claims won, and the first failure (the database, or the tenant directory), if any.
   */
  private async claimUnclaimed(holder: AheadClaimHolder, scheduledAt: number): Promise<{ claims: HeldClaim[]; failure?: { error: unknown } }> {
    const declaration = holder.job.declaration;
    const owner = { scheduleId: declaration.dynamicSchedule?.id };
    let runKeys = [runKeyOf(owner, scheduledAt)];
    if (declaration.tenancy === 'per-tenant') {
      try {
        const tenants = (await this.options.listTenants?.()) ?? [];
        const valid = new Set(tenants.filter((tenantId): tenantId is string => tenantIdProblem(tenantId) === null));
        runKeys = [...valid].map((tenantId) => runKeyOf(owner, scheduledAt, tenantId));
      } catch (error) {
        return { claims: [], failure: { error } };
      }
    }
    const outcomes = await Promise.all(runKeys.map((runKey) => this.options.runner.claims.claim(declaration, runKey, randomUuid())));
    const unavailable = outcomes.find((claimed) => claimed.kind === 'unavailable');
    return { claims: outcomes.flatMap((claimed) => (claimed.kind === 'acquired' ? [claimed.claim] : [])), ...(unavailable ? { failure: unavailable } : {}) };
  }

  /** Of these passed instants, those no instance recorded: a stalled instance must not report others' runs as missed. */
  private unrecorded(holder: AheadClaimHolder, instants: number[]): Promise<number[]> {
    const { history, timers, logger } = this.options;
    return unrecordedInstants(history, jobKeyOf(holder.job.declaration), instants, timers, logger);
  }
}
