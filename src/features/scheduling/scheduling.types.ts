/** When a job is due: an epoch-aligned interval, or a cron expression on a time zone's clock. */
export type JobSchedule =
  | { every: string | number; cron?: never; timeZone?: never }
  | { cron: string; timeZone?: string; every?: never };

export type OverlapPolicy = 'skip' | 'queue';
export type MissedPolicy = 'drop' | 'run-once';
export type JobTenancy = 'global' | 'per-tenant';

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
  /** Per-tenant jobs: how many tenants this instance runs at once (default 4, at most 100). */
  tenantConcurrency?: number;
  /** A random delay of the start, up to this many ms, that never changes scheduledAt. */
  jitterMs?: number;
  /** The lease of each run (default: the JobSchedulerModule default, 15 minutes). */
  leaseMs?: number;
}

export type ScheduledJobOptions = JobSchedule & JobPolicies;

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
  /** 1 for the first owner of the occurrence, +1 per takeover: lets a resource refuse a stale writer. */
  readonly fencingToken: number;
  /** A fresh id per run, for logs and traces. */
  readonly correlationId: string;
  /** What started the run. */
  readonly trigger: 'schedule' | 'catch-up' | 'run-now';
}

/** A provider decorated with @Scheduled implements this. */
export interface ScheduledJob {
  run(execution: JobExecution): Promise<void> | void;
}

export type JobRunOutcome = 'succeeded' | 'failed' | 'skipped-locked' | 'skipped-overlap' | 'missed';

/** One recorded outcome of one occurrence (and tenant). */
export interface JobRunRecord {
  name: string;
  outcome: JobRunOutcome;
  scheduledAt: Date;
  trigger: JobExecution['trigger'];
  tenantId?: string;
  startedAt?: Date;
  finishedAt?: Date;
  durationMs?: number;
  correlationId?: string;
  /**
   * For failed runs: `JOB_FAILED` (the job threw), `JOB_TIMEOUT`, `JOB_SHUTDOWN` (stopped by
   * application shutdown), `JOB_LEASE_LOST`, `JOB_LEASE_UNAVAILABLE` (the database could not be
   * reached), `JOB_TENANTS_UNAVAILABLE` or `JOB_TENANT_INVALID` (the directory listed a tenant id
   * no lease key can hold: see JobTenantInvalidError).
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
