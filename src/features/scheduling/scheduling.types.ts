/** When a job is due: an epoch-aligned interval, or a cron expression on a time zone's clock. */
export type JobSchedule = { every: string | number; cron?: never; timeZone?: never } | { cron: string; timeZone?: string; every?: never };

export type OverlapPolicy = 'skip' | 'queue';
export type MissedPolicy = 'drop' | 'run-once';
export type JobTenancy = 'global' | 'per-tenant';
export type AbandonedPolicy = 'take-over' | 'drop';

/** The policies that sit next to a schedule. */
export interface JobPolicies {
  /** An occurrence due while this instance still runs the previous one: skipped (default) or queued (one waiting at most). */
  overlap?: OverlapPolicy;
  /** Occurrences that passed while no instance ran them: dropped (default), or the latest runs once. */
  missed?: MissedPolicy;
  /** Past this, the run's signal aborts, it is recorded failed with JOB_TIMEOUT and no longer awaited. */
  timeoutMs?: number;
  /** One run per occurrence (default), or one per tenant of the TenantDirectory. */
  tenancy?: JobTenancy;
  /** Per-tenant jobs: how many tenants this instance runs at once (default 8, at most 100). */
  tenantConcurrency?: number;
  /**
   * A random delay of the start, up to this many ms, that never changes scheduledAt. Below the
   * scheduler's lateToleranceMs: an instance still waiting its jitter must reach the occurrence
   * before a lagging instance may judge it missed.
   */
  jitterMs?: number;
  /**
   * The lease of each run (default 60 s): heartbeats keep a long run alive, and an occurrence whose
   * holder vanished is found about one lease later (see `abandoned`).
   */
  leaseMs?: number;
  /**
   * An occurrence whose holder stopped heartbeating (its process died): another instance takes it
   * over and runs it again (default), or records it abandoned without running it ('drop').
   */
  abandoned?: AbandonedPolicy;
  /**
   * How many owners an occurrence may have in all, first run included (default 3): past it, an
   * abandoned occurrence is recorded failed with JOB_ABANDONED, so that a job that kills its
   * process cannot crash the fleet one instance after another.
   */
  maxAttempts?: number;
}

export type ScheduledJobOptions = JobSchedule & JobPolicies;

/** The stored schedule a run of a dynamic schedule belongs to (see DynamicSchedules). */
export interface ScheduleOfRun {
  /** The caller's stable id of the schedule. */
  readonly id: string;
  /** What the schedule was stored with (JSON), null when none. */
  readonly data: unknown;
  /** The tenant the schedule was stored for, if any. */
  readonly tenantId?: string;
}

/** What a run of a scheduled job receives. */
export interface JobExecution {
  /** `<context>.<job-name>`. */
  readonly name: string;
  /** The instant the occurrence was due: build the work from this, never from the clock. */
  readonly scheduledAt: Date;
  /** The instant this run actually started. */
  readonly startedAt: Date;
  /** Aborts on timeout, lost lease or shutdown. Pass it on. */
  readonly signal: AbortSignal;
  /** The tenant of a per-tenant job's run; undefined for global jobs. */
  readonly tenantId?: string;
  /** Stable for the occurrence (and tenant) across instances and retries: key side effects on it. */
  readonly idempotencyKey: string;
  /**
   * Greater than the token of every earlier owner of the occurrence (drawn from one sequence on
   * each acquire and take-over): lets a resource refuse a stale writer.
   */
  readonly fencingToken: number;
  /** A fresh id per run, for logs and traces. */
  readonly correlationId: string;
  /**
   * What started the run: its due instant, a catch-up after downtime (`missed: 'run-once'`), a
   * runNow call, or the take-over of an occurrence whose holder vanished (same idempotencyKey,
   * greater fencingToken).
   */
  readonly trigger: 'schedule' | 'catch-up' | 'run-now' | 'take-over';
  /** A dynamic schedule's run: the schedule's id, data and tenant (undefined for declared jobs). */
  readonly schedule?: ScheduleOfRun;
}

/** A provider decorated with @Scheduled implements this. */
export interface ScheduledJob {
  run(execution: JobExecution): Promise<void> | void;
}

/**
 * `abandoned`: an occurrence whose holder vanished, ended without another run (its policy is
 * 'drop', or it had maxAttempts owners); recorded once, by the instance that found it.
 */
export type JobRunOutcome = 'succeeded' | 'failed' | 'skipped-locked' | 'skipped-overlap' | 'missed' | 'abandoned';

/** One recorded outcome of one occurrence (and tenant). */
export interface JobRunRecord {
  name: string;
  outcome: JobRunOutcome;
  scheduledAt: Date;
  trigger: JobExecution['trigger'];
  tenantId?: string;
  /** The dynamic schedule of the occurrence (undefined for declared jobs). */
  scheduleId?: string;
  startedAt?: Date;
  finishedAt?: Date;
  durationMs?: number;
  correlationId?: string;
  /**
   * For failed runs: `JOB_FAILED` (the job threw), `JOB_TIMEOUT`, `JOB_SHUTDOWN` (stopped by
   * application shutdown), `JOB_LEASE_LOST`, `JOB_LEASE_UNAVAILABLE` (the database could not be
   * reached) or `JOB_TENANTS_UNAVAILABLE` or `JOB_TENANT_INVALID` (the directory listed a tenant id
   * no lease key can hold: see JobTenantInvalidError). For abandoned occurrences: `JOB_ABANDONED`.
   */
  errorCode?: string;
  error?: unknown;
}

export type JobRunListener = (record: JobRunRecord) => void;

/** Per-job settings, keyed by job name, given where the module is wired. */
export interface JobSettings {
  /** false: no timers for this job (runNow still runs it). */
  enabled?: boolean;
  /** Replaces the declared schedule (validated like a declaration). */
  schedule?: JobSchedule;
}

/** Lists the tenants a per-tenant job runs for, at each occurrence. */
export interface TenantDirectory {
  listTenants(): Promise<readonly string[]> | readonly string[];
}
