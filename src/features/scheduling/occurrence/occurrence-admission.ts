import { type AheadClaimHolder, type AheadClaims, lostAheadRecord } from './ahead-claims';
import type { AheadClaim, HeldClaim } from './held-claim';
import type { JobOccupancy } from './job-occupancy';
import type { JobHandler, OccurrenceRunner } from './occurrence-runner';
import type { UnrunOccurrences } from './unrun-occurrences';
import { whenSettled } from './when-settled';
import type { TenantFanOut } from '../fleet/tenant-fan-out';
import type { RunRecords } from '../records/run-records';
import type { JobDeclaration } from '../schedule/job-declaration';
import type { JobExecution, JobRunRecord } from '../scheduling.types';
import type { JitterWaits } from '../timers/jitter-waits';

type Trigger = JobExecution['trigger'];

/** A job as admission sees it (the engine's job state): what it runs, and its runs here. */
export interface AdmittedJob extends AheadClaimHolder {
  job: { declaration: JobDeclaration; handler: JobHandler };
  occupancy: JobOccupancy<{ scheduledAt: number; trigger: Trigger }>;
}

export interface OccurrenceAdmissionOptions {
  runner: OccurrenceRunner;
  ahead: AheadClaims;
  unrun: UnrunOccurrences;
  records: RunRecords;
  jitter: JitterWaits;
  tenantFanOut: TenantFanOut;
  /** The tenants the directory lists now (see tenantLister); set when a job is per-tenant. */
  listTenants?: () => Promise<readonly unknown[]>;
  /** Keeps work in the engine's work in flight (idle(), stop()). */
  track: <T>(work: Promise<T>) => Promise<T>;
  /** Whether the scheduler runs (a queued occurrence is not started after stop). */
  running: () => boolean;
}

/**
 * How an occurrence the engine found due (or took over, or was asked to run now) enters: the
 * overlap policy on the runs in progress here, its claim ahead or take-over claim, its jitter,
 * then its run (its tenants' runs, for a per-tenant job), each outcome recorded. What comes
 * before (which instants are due, missed, caught up) is the engine's.
 */
export class OccurrenceAdmission {
  constructor(private readonly options: OccurrenceAdmissionOptions) {}

  /**
   * The overlap policy, on the runs in progress here (never on claims in flight): an occurrence
   * due while the previous one runs is skipped here (an idle instance runs it; see
   * UnrunOccurrences.skippedOverlap), or queued behind it (one at most).
   */
  admit(job: AdmittedJob, scheduledAt: number, trigger: Trigger, tenantId?: string, claim?: HeldClaim): Promise<JobRunRecord[]> {
    const { occupancy } = job;
    if (occupancy.overlaps(job.job.declaration.overlap)) return this.overlapping(job, scheduledAt, trigger, claim);
    occupancy.admitted++;
    // Not async (see run).
    const leave = (): void => {
      occupancy.admitted--;
      const queued = occupancy.queued;
      if (queued && occupancy.admitted === 0 && this.options.running()) {
        occupancy.queued = undefined;
        void this.options.track(this.admit(job, queued.scheduledAt, queued.trigger));
      }
    };
    return whenSettled(this.run(job, scheduledAt, trigger, tenantId, claim), leave);
  }

  /**
   * Runs an occurrence (its tenants', for a per-tenant job) and records how each ended, past the
   * overlap policy. Not async on the way of a run claimed ahead: a suspended frame per run, while
   * thousands run together, was a tenth of a running handler's memory.
   */
  run(job: AdmittedJob, scheduledAt: number, trigger: Trigger, tenantId?: string, claim?: HeldClaim): Promise<JobRunRecord[]> {
    try {
      return this.start(job, scheduledAt, trigger, tenantId, claim);
    } catch (error) {
      // As from the async function it was: an error is a rejection, never a throw into a timer.
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- whatever was thrown, passed on as it came
      return Promise.reject(error);
    }
  }

  /** An occurrence due while the job runs here: skipped, queued (one at most), or a take-over's claim handed back. */
  private async overlapping(job: AdmittedJob, scheduledAt: number, trigger: Trigger, claim?: HeldClaim): Promise<JobRunRecord[]> {
    const { occupancy } = job;
    if (claim) {
      // A claimed take-over (checked idle a moment ago): handed back to the fleet, never queued unheld.
      await this.options.runner.claims.handOver([claim]);
      return [];
    }
    if (job.job.declaration.overlap === 'queue' && !occupancy.queued) {
      occupancy.queued = { scheduledAt, trigger };
      return [];
    }
    return [await this.options.unrun.skippedOverlap(job, scheduledAt, trigger)];
  }

  private start(job: AdmittedJob, scheduledAt: number, trigger: Trigger, tenantId?: string, claim?: HeldClaim): Promise<JobRunRecord[]> {
    const { declaration } = job.job;
    const ahead = trigger === 'schedule' || trigger === 'catch-up' ? this.options.ahead.take(job, scheduledAt) : undefined;
    // Claimed ahead by another instance (known before the instant): recorded at once, nothing to wait for.
    if (ahead?.settled?.kind === 'lost') return Promise.resolve([this.options.records.emit(lostAheadRecord(declaration, scheduledAt, trigger, ahead))]);
    if ((trigger === 'schedule' || trigger === 'catch-up') && declaration.jitterMs > 0) {
      // Cancelled by the engine's stop(), which hands over the claim ahead this wait held.
      return this.options.jitter
        .wait(declaration.jitterMs, ahead)
        .then((waited) => (waited ? this.runClaimed(job, scheduledAt, trigger, tenantId, ahead, claim) : []));
    }
    return this.runClaimed(job, scheduledAt, trigger, tenantId, ahead, claim);
  }

  /** The occurrence's run (its claim ahead or take-over claim, if any), or its tenants' runs. */
  private runClaimed(
    job: AdmittedJob,
    scheduledAt: number,
    trigger: Trigger,
    tenantId: string | undefined,
    ahead: AheadClaim | undefined,
    claim: HeldClaim | undefined,
  ): Promise<JobRunRecord[]> {
    const { declaration, handler } = job.job;
    // A take-over runs the one (tenant's) occurrence that was abandoned.
    if (declaration.tenancy === 'global' || trigger === 'take-over') {
      // A runNow runs whatever runs already (as asked); an occurrence enters by the overlap policy.
      const enter = trigger === 'run-now' || tenantId !== undefined ? undefined : () => job.occupancy.enter(declaration.overlap);
      return this.options.runner.run({ job: declaration, handler, scheduledAt, trigger, tenantId, ahead, claim, enter }).then(this.emitOne);
    }
    return this.runTenants(job, scheduledAt, trigger);
  }

  /** A run's record, emitted (one function for every run: no closure per run). */
  private readonly emitOne = (record: JobRunRecord): JobRunRecord[] => [this.options.records.emit(record)];

  /** A per-tenant occurrence: the tenants listed now, each in a run of its own. */
  private async runTenants(job: AdmittedJob, scheduledAt: number, trigger: Trigger): Promise<JobRunRecord[]> {
    const { declaration, handler } = job.job;
    let tenants: readonly unknown[];
    try {
      tenants = await (this.options.listTenants as () => Promise<readonly unknown[]>)();
    } catch (error) {
      return [
        this.options.records.emit({
          name: declaration.name,
          outcome: 'failed',
          scheduledAt: new Date(scheduledAt),
          trigger,
          errorCode: 'JOB_TENANTS_UNAVAILABLE',
          error,
        }),
      ];
    }
    // Each tenant in a run of its own: one failing does not stop the others.
    const leave = trigger === 'run-now' ? () => undefined : await job.occupancy.enter(declaration.overlap);
    if (!leave) return [await this.options.unrun.skippedOverlap(job, scheduledAt, trigger)];
    try {
      return await this.options.tenantFanOut.run({ job: declaration, handler, scheduledAt, trigger, tenants });
    } finally {
      leave();
    }
  }
}
