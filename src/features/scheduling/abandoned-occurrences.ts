import { occurrenceOfRunKey } from './occurrence-keys';
import { PeriodicTask } from './periodic-task';
import type { JobDeclaration } from './schedule/job-declaration';
import type { SchedulerLogger, SchedulerTimers } from './scheduler-ports';
import { JobAbandonedError } from './scheduling.errors';
import type { JobRunRecord } from './scheduling.types';

/** A scheduled occurrence still RUNNING past its lease by the database clock: its holder is gone. */
export interface AbandonedOccurrence {
  id: string;
  code: string;
  runKey: string;
  /** Owners it has had so far (1 + take-overs). */
  attempts: number;
  /** How long ago its lease ran out, by the database clock. */
  expiredForMs: number;
}

/** Where abandoned occurrences are found and ended: JobSchedulerService on PostgreSQL. */
export interface AbandonedOccurrenceStore {
  /** One read for every code: the occurrences RUNNING past their lease, oldest heartbeat first. */
  abandonedOccurrences(codes: readonly string[], limit: number): Promise<AbandonedOccurrence[]>;
  /** Ends it FAIL with `data` unless it was taken over meanwhile; true if this call did. */
  abandonOccurrence(occurrence: Pick<AbandonedOccurrence, 'id' | 'attempts'>, data: unknown): Promise<boolean>;
}

/** Whether a lease (the PostgreSQL one, the in-memory one of tests) can find abandoned occurrences. */
export const canFindAbandoned = (lease: object): lease is AbandonedOccurrenceStore =>
  typeof (lease as Partial<AbandonedOccurrenceStore>).abandonedOccurrences === 'function' &&
  typeof (lease as Partial<AbandonedOccurrenceStore>).abandonOccurrence === 'function';

/** What a job says about its abandoned occurrences (a @Scheduled job's declaration, a @RunOnce plan). */
export type TakeOverPolicy = Pick<JobDeclaration, 'name' | 'abandoned' | 'maxAttempts' | 'missed'>;

/** The job and the occurrence an abandoned row names. */
export interface AbandonedTarget<Job> {
  job: Job;
  scheduledAt: number;
  tenantId?: string;
  scheduleId?: string;
}

/** A declared job's occurrence: the job of that name, the instant (and tenant) of its runKey. */
const resolveByName = <Job extends TakeOverPolicy>(jobs: ReadonlyMap<string, Job>, occurrence: AbandonedOccurrence): AbandonedTarget<Job> | null => {
  const job = jobs.get(occurrence.code);
  const key = occurrenceOfRunKey(occurrence.runKey);
  return job && key && key.scheduleId === undefined ? { job, scheduledAt: key.scheduledAt, tenantId: key.tenantId } : null;
};

/** What the scan needs of the scheduler: its jobs, a way to run an occurrence again, and its outcomes. */
export interface AbandonedOccurrenceHost<Job extends TakeOverPolicy = TakeOverPolicy> {
  /** The jobs whose timers run on this instance. */
  enabledJobs(): Job[];
  /**
   * The job and occurrence a row of one of their codes names, or null when none here runs it.
   * Default: the job named by the code, at the instant (and tenant) of the runKey.
   */
  resolve?(code: string, runKey: string): AbandonedTarget<Job> | null;
  /** Runs the occurrence again here with trigger 'take-over' (its acquire reclaims the row); not awaited. */
  takeOver(job: Job, scheduledAt: number, tenantId: string | undefined): void;
  record(record: JobRunRecord): void;
}

/** How often each instance looks for abandoned occurrences, by default: half the default lease. */
export const DEFAULT_TAKE_OVER_SCAN_MS = 30_000;
/** Occurrences handled per scan, at most (the rest wait for the next scan). */
const SCAN_LIMIT = 100;

/**
 * Finds the scheduled occurrences whose holder stopped heartbeating (a killed process, a lost
 * host) with one indexed query per period for all of this instance's jobs, and finishes them:
 * taken over (run again, same idempotency key, a greater fencing token) while the occurrence has
 * had fewer than its job's maxAttempts owners, else recorded failed with JOB_ABANDONED; a job
 * with `abandoned: 'drop'` is recorded so at once. Every instance scans; the row decides: a
 * reclaim or an abandon applies only to a row still RUNNING past its lease, so one instance wins
 * and the others write nothing.
 */
export class AbandonedOccurrenceScan<Job extends TakeOverPolicy = TakeOverPolicy> {
  /** The scan, every periodMs. */
  private readonly periodic: PeriodicTask;

  constructor(
    private readonly store: AbandonedOccurrenceStore,
    private readonly host: AbandonedOccurrenceHost<Job>,
    private readonly timers: SchedulerTimers,
    private readonly logger: SchedulerLogger,
    private readonly periodMs: number,
    /** Found later than this (plus a period) after its lease ran out: late, as a missed occurrence is. */
    private readonly lateToleranceMs: number,
  ) {
    this.periodic = new PeriodicTask(timers, periodMs, () => this.scan(), (error) => logger.warn(`Could not look for abandoned occurrences: ${String(error)}`));
  }

  /** Arms the periodic scan, when this instance runs any job (again after a job is added; once). */
  start(): void {
    if (this.periodic.started || this.host.enabledJobs().length === 0) return;
    this.periodic.start();
  }

  /** Stops the timer and waits for a scan in progress (the take-overs it started are the engine's). */
  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** One scan now: every abandoned occurrence of this instance's jobs is taken over or ended. */
  async scan(): Promise<void> {
    const jobs = this.host.enabledJobs();
    if (jobs.length === 0) return;
    const byName = new Map(jobs.map((job) => [job.name, job]));
    const found = this.store.abandonedOccurrences([...byName.keys()], SCAN_LIMIT);
    this.timers.observe?.(found);
    for (const occurrence of await found) {
      if (!this.periodic.started) return;
      const target = this.host.resolve ? this.host.resolve(occurrence.code, occurrence.runKey) : resolveByName(byName, occurrence);
      // Handed over before its instant (an instance stopped after claiming it ahead): taken at or after the instant.
      if (!target || target.scheduledAt > this.timers.now()) continue;
      const reason = this.reasonToEnd(target.job, occurrence);
      if (reason === null) this.host.takeOver(target.job, target.scheduledAt, target.tenantId);
      else await this.abandon(target.job, occurrence, target, reason);
    }
  }

  /**
   * Why the occurrence is ended rather than taken over, or null. Late: no instance ran this job
   * for longer than the tolerance after the lease ran out (the fleet was down, or these are rows
   * of an older release); like a missed occurrence it runs only with `missed: 'run-once'`.
   */
  private reasonToEnd(job: Job, occurrence: AbandonedOccurrence): JobAbandonedError['reason'] | null {
    if (job.abandoned === 'drop') return 'drop';
    if (occurrence.attempts >= job.maxAttempts) return 'attempts';
    if (occurrence.expiredForMs > this.lateToleranceMs + this.periodMs && job.missed !== 'run-once') return 'late';
    return null;
  }

  private async abandon(
    job: Job,
    occurrence: AbandonedOccurrence,
    key: AbandonedTarget<Job>,
    reason: JobAbandonedError['reason'],
  ): Promise<void> {
    const error = new JobAbandonedError(job.name, occurrence.attempts, reason);
    const ended = this.store.abandonOccurrence(occurrence, {
      abandoned: true,
      attempts: occurrence.attempts,
      error: { name: error.name, code: error.code, message: error.message },
    });
    this.timers.observe?.(ended);
    if (!(await ended)) return;
    this.host.record({
      name: job.name,
      outcome: 'abandoned',
      scheduledAt: new Date(key.scheduledAt),
      trigger: 'take-over',
      tenantId: key.tenantId,
      ...(key.scheduleId === undefined ? {} : { scheduleId: key.scheduleId }),
      errorCode: error.code,
      error,
    });
  }
}
