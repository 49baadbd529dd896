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

export type SchedulingErrorCode = 'UNKNOWN_JOB' | 'DUPLICATE_JOB' | 'NO_TENANT_DIRECTORY' | 'NOT_A_JOB' | 'NO_LEASE' | 'INVALID_OPTIONS';

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

export const schedulingErrors = {
  unknownJob: (name: string) =>
    new SchedulingError('UNKNOWN_JOB', `No scheduled job is declared with the name "${name}"`, name),
  unknownSetting: (name: string) =>
    new SchedulingError('UNKNOWN_JOB', `Settings name the job "${name}", which no module declares`, name),
  duplicate: (name: string, first: string, second: string) =>
    new SchedulingError('DUPLICATE_JOB', `The scheduled job "${name}" is declared twice: by ${first} and by ${second}`, name),
  noTenants: (name: string) =>
    new SchedulingError(
      'NO_TENANT_DIRECTORY',
      `The scheduled job "${name}" runs per tenant, but SchedulingModule was given no tenants directory`,
      name,
    ),
  noLease: () =>
    new SchedulingError('NO_LEASE', 'SchedulingModule needs JobSchedulerModule (imported globally) or a lease option'),
  invalidOption: (field: string, rule: string, value: unknown) =>
    new SchedulingError('INVALID_OPTIONS', `SchedulingModule option ${field} must be ${rule}, got ${typeof value === 'string' ? `"${value}"` : String(value)}`),
  notAJob: (name: string, className: string) =>
    new SchedulingError('NOT_A_JOB', `${className} is declared as the scheduled job "${name}" but has no run() method`, name),
};
