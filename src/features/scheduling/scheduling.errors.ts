import { describeDifference } from '../job-scheduler/module-registrations';
/** A @Scheduled declaration (or a schedule setting) that cannot run; names the job. */
export class DeclarationError extends Error {
  readonly code = 'DECLARATION_ERROR';

  constructor(
    readonly jobName: string,
    reason: string,
  ) {
    super(`Scheduled job "${jobName}": ${reason}`);
    this.name = 'DeclarationError';
  }
}

/**
 * One input of `DynamicSchedules.upsertMany` that cannot be written (invalid as `upsert` would
 * find it, or an id given twice): names its index and id. Thrown before any SQL: nothing of the
 * call is written. A DeclarationError, so code that catches upsert's errors catches it too.
 */
export class DynamicScheduleBatchError extends DeclarationError {
  constructor(
    /** The position of the first bad input in the array given. */
    readonly index: number,
    /** Its id, when it is a string. */
    readonly scheduleId: string | undefined,
    reason: string,
  ) {
    super(scheduleId ?? `upsertMany input ${index}`, `upsertMany input ${index}: ${reason}; nothing was written`);
    this.name = 'DynamicScheduleBatchError';
  }
}

export type SchedulingErrorCode =
  'UNKNOWN_JOB' | 'DUPLICATE_JOB' | 'NO_TENANT_DIRECTORY' | 'NOT_A_JOB' | 'NO_LEASE' | 'INVALID_OPTIONS' | 'DUPLICATE_MODULE' | 'PAUSES_UNAVAILABLE';

/** A scheduling configuration or call that refers to jobs wrongly. */
export class SchedulingError extends Error {
  constructor(
    readonly code: SchedulingErrorCode,
    message: string,
    readonly jobName?: string,
  ) {
    super(message);
    this.name = 'SchedulingError';
  }
}

/** The reason a run's signal aborts when it outlives its timeoutMs. */
export class JobTimeoutError extends Error {
  readonly code = 'JOB_TIMEOUT';

  constructor(
    readonly jobName: string,
    readonly timeoutMs: number,
  ) {
    super(`Scheduled job "${jobName}" did not finish within ${timeoutMs} ms`);
    this.name = 'JobTimeoutError';
  }
}

/**
 * Why an occurrence whose holder vanished was not run again: its job says `abandoned: 'drop'`,
 * or it already had maxAttempts owners (a job that kills its process must not take the fleet down),
 * or it was found late; or its runKey names no occurrence this release can read.
 */
export class JobAbandonedError extends Error {
  readonly code = 'JOB_ABANDONED';

  constructor(
    readonly jobName: string,
    readonly attempts: number,
    readonly reason: 'drop' | 'attempts' | 'late' | 'unreadable',
  ) {
    const why = {
      drop: "abandoned: 'drop' ends it without another run",
      attempts: `it has had ${attempts} owner(s), its maxAttempts: not run again`,
      late: "no instance found it within the late tolerance after its lease ran out (was the fleet down?): missed, not run again (missed: 'run-once' would run it)",
      unreadable: 'its runKey names no occurrence this release can read (written by an older release?): not run again',
    }[reason];
    super(`Scheduled job "${jobName}": the holder of this occurrence stopped heartbeating; ${why}`);
    this.name = 'JobAbandonedError';
  }
}

/**
 * Why an occurrence of a dynamic schedule was ended unrun by the take-over: its holder stopped
 * heartbeating (or handed it over on shutdown), and the schedule was removed before another
 * instance took it over. Recorded `abandoned` with this code; its row ends FAIL.
 */
export class JobScheduleRemovedError extends Error {
  readonly code = 'JOB_SCHEDULE_REMOVED';

  constructor(
    readonly jobName: string,
    readonly scheduleId: string,
  ) {
    super(
      `Dynamic schedule "${scheduleId}" (handler "${jobName}") was removed before its abandoned occurrence was taken over: the occurrence is ended, not run`,
    );
    this.name = 'JobScheduleRemovedError';
  }
}

/**
 * A tenant the directory listed that cannot have a lease key: not a string, text PostgreSQL
 * cannot store (NUL, a lone surrogate), or too long once encoded. Names the tenant and the job;
 * recorded as that tenant's failed run (`JOB_TENANT_INVALID`), the other tenants run.
 */
export class JobTenantInvalidError extends Error {
  readonly code = 'JOB_TENANT_INVALID';

  constructor(
    readonly jobName: string,
    readonly tenantId: unknown,
    reason: string,
  ) {
    super(`Scheduled job "${jobName}" cannot run for the tenant ${describeTenant(tenantId)}: ${reason}`);
    this.name = 'JobTenantInvalidError';
  }
}

/** A tenant id for a message: JSON-quoted (NUL and lone surrogates escaped), long ones cut. */
const describeTenant = (tenantId: unknown): string => {
  if (typeof tenantId !== 'string') {
    let text: string;
    try {
      text = String(tenantId).slice(0, 80);
    } catch {
      text = '(unprintable)';
    }
    return `${tenantId === null ? 'null' : typeof tenantId} ${text}`;
  }
  const shown = tenantId.length > 80 ? `${tenantId.slice(0, 80)}…` : tenantId;
  return `${JSON.stringify(shown)}${tenantId.length > 80 ? ` (${tenantId.length} characters)` : ''}`;
};

export const schedulingErrors = {
  unknownJob: (name: string) => new SchedulingError('UNKNOWN_JOB', `No scheduled job is declared with the name "${name}"`, name),
  unknownSetting: (name: string) =>
    new SchedulingError(
      'UNKNOWN_JOB',
      `Settings name the job "${name}", which no module declares: fix the name, or declare the job with @Scheduled('${name}', …) in a provider of a module the application imports`,
      name,
    ),
  duplicate: (name: string, first: string, second: string) =>
    new SchedulingError('DUPLICATE_JOB', `The scheduled job "${name}" is declared twice: by ${first} and by ${second}`, name),
  noTenants: (name: string) =>
    new SchedulingError(
      'NO_TENANT_DIRECTORY',
      `The scheduled job "${name}" runs per tenant, but SchedulingModule was given no tenants directory: register a provider { provide: TENANT_DIRECTORY, useClass: YourTenants } that implements TenantDirectory, or pass SchedulingModule.forRoot({ tenants })`,
      name,
    ),
  noLease: () =>
    new SchedulingError(
      'NO_LEASE',
      'SchedulingModule needs the lease: import JobSchedulerModule.forRoot() (global by default) next to TypeOrmModule.forRoot in the root module, or pass a lease option in tests',
    ),
  duplicateModule: (module: string, count: number, differingKeys: readonly string[]) =>
    new SchedulingError(
      'DUPLICATE_MODULE',
      `${module} is imported ${count} times with different options (${describeDifference(differingKeys)}): import ${module}.forRoot(…) once, in the root module (it is global), or give every import the same options`,
    ),
  invalidOption: (field: string, rule: string, value: unknown) =>
    new SchedulingError('INVALID_OPTIONS', `SchedulingModule option ${field} must be ${rule}, got ${typeof value === 'string' ? `"${value}"` : String(value)}`),
  pausesUnavailable: (name: string) =>
    new SchedulingError(
      'PAUSES_UNAVAILABLE',
      `Cannot pause or resume "${name}": pauses are kept in PostgreSQL, next to the lease (not with a test lease, nor with SchedulingModule's pauses: false)`,
      name,
    ),
  notAJob: (name: string, className: string) =>
    new SchedulingError('NOT_A_JOB', `${className} is declared as the scheduled job "${name}" but has no run() method`, name),
};
