/**
 * Every error the lease raises, with its message built here and nowhere else. Recognise them by
 * class (`instanceof`) or by `code`, never by message text.
 */

export class LostJobLeaseError extends Error {
  readonly code = 'JOB_LEASE_LOST';

  constructor(
    readonly leaseId: string,
    options?: { cause?: unknown; reason?: string },
  ) {
    super(
      `Job lease ${leaseId} is no longer owned by this worker${options?.reason ? `: ${options.reason}` : ''}`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'LostJobLeaseError';
  }

  /** The 1.x name of `leaseId`, kept for code written against 1.x. */
  get jobId(): string {
    return this.leaseId;
  }
}

export class InvalidJobLeaseOptionsError extends Error {
  readonly code = 'INVALID_JOB_LEASE_OPTIONS';

  constructor(message: string) {
    super(message);
    this.name = 'InvalidJobLeaseOptionsError';
  }
}

export class InvalidJobIdentityOptionsError extends Error {
  readonly code = 'INVALID_JOB_IDENTITY_OPTIONS';

  constructor(message: string) {
    super(message);
    this.name = 'InvalidJobIdentityOptionsError';
  }
}

/** The signal reason given to running callbacks when the application shuts down. */
export class JobShutdownError extends Error {
  readonly code = 'JOB_SHUTDOWN';

  constructor(readonly leaseId: string) {
    super(`The application is shutting down: job lease ${leaseId} will be released unless its callback settles first`);
    this.name = 'JobShutdownError';
  }
}

/** Prune or inspection options that cannot be used. */
export class InvalidJobQueryOptionsError extends Error {
  readonly code = 'INVALID_JOB_QUERY_OPTIONS';

  constructor(message: string) {
    super(message);
    this.name = 'InvalidJobQueryOptionsError';
  }
}

/** Module options that cannot be used. */
export class InvalidJobSchedulerModuleOptionsError extends Error {
  readonly code = 'INVALID_JOB_SCHEDULER_MODULE_OPTIONS';

  constructor(message: string) {
    super(message);
    this.name = 'InvalidJobSchedulerModuleOptionsError';
  }
}

/** Data given to complete / fail / release that cannot be stored as JSONB. */
export class InvalidJobDataError extends Error {
  readonly code = 'INVALID_JOB_DATA';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InvalidJobDataError';
  }
}

/** A JobLease argument that is not `{ id: uuid, ownerToken: uuid }`. */
export class InvalidJobLeaseError extends Error {
  readonly code = 'INVALID_JOB_LEASE';

  constructor(message: string) {
    super(message);
    this.name = 'InvalidJobLeaseError';
  }
}

/** What the lease was doing when the database failed it. */
export type JobLeaseDatabaseOperation =
  | 'acquire'
  | 'heartbeat'
  | 'complete'
  | 'fail'
  | 'prune'
  | 'inspect'
  | 'history'
  | 'take-over'
  | 'pause'
  | 'release'
  | 'replication-check'
  | 'schedules'
  | 'schema-check';

/**
 * The database failed a lease statement: it could not be reached, did not answer in time, or
 * refused the statement. `sqlState` is PostgreSQL's code when the server answered (undefined for a
 * connection refused, reset or closed, or a statement timed out client-side); `retryable` says
 * whether the same statement may succeed later. The driver's error is the `cause`, rebuilt without
 * the statement's parameters: no owner token reaches this error, its cause, its JSON or a log.
 */
export class JobLeaseDatabaseError extends Error {
  readonly code = 'JOB_LEASE_DATABASE';
  readonly operation: JobLeaseDatabaseOperation;
  readonly sqlState: string | undefined;
  readonly retryable: boolean;

  constructor(message: string, details: { operation: JobLeaseDatabaseOperation; sqlState?: string; retryable: boolean; cause?: unknown }) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'JobLeaseDatabaseError';
    this.operation = details.operation;
    this.sqlState = details.sqlState;
    this.retryable = details.retryable;
  }
}

/**
 * Refused to grant a lease: `requireSynchronousReplication` is set and the primary streams to
 * standbys without synchronous replication, so a failover could forget the lease.
 */
export class JobLeaseReplicationError extends Error {
  readonly code = 'JOB_LEASE_REPLICATION_UNSAFE';

  constructor(message: string) {
    super(message);
    this.name = 'JobLeaseReplicationError';
  }
}

/**
 * At boot: a table, a column or a sequence the library uses is missing from the database (its
 * migrations have not run, or not all of them). `missing` lists each part with the migration that
 * creates it; the message names them all, once, instead of an error per statement later.
 */
export class JobSchedulerSchemaError extends Error {
  readonly code = 'JOB_SCHEDULER_SCHEMA_MISSING';

  constructor(
    message: string,
    readonly missing: readonly { role: string; name: string; column?: string; migration: string }[],
  ) {
    super(message);
    this.name = 'JobSchedulerSchemaError';
  }
}

/** runExclusive was given a callback that is not a function. */
export class InvalidJobCallbackError extends Error {
  readonly code = 'INVALID_JOB_CALLBACK';

  constructor(message: string) {
    super(message);
    this.name = 'InvalidJobCallbackError';
  }
}

const describe = (value: unknown): string => {
  if (value === null) return 'null';
  if (typeof value === 'string') return `a string of ${value.length} characters`;
  if (typeof value === 'number') return String(value);
  return typeof value;
};

export const identityErrors = {
  notAnObject: (value: unknown) => new InvalidJobIdentityOptionsError(`Job acquire options must be an object, got ${describe(value)}`),
  codeNotString: (value: unknown) => new InvalidJobIdentityOptionsError(`Job code must be a string, got ${describe(value)}`),
  codeLength: (length: number) => new InvalidJobIdentityOptionsError(`Job code must contain 1-64 characters after trimming, got ${length}`),
  unknownType: (value: unknown) => new InvalidJobIdentityOptionsError(`Job type must be INITIAL or SCHEDULE, got ${describe(value)}`),
  runKeyRequired: () => new InvalidJobIdentityOptionsError('A SCHEDULE job requires a nonblank string runKey naming the occurrence'),
  runKeyNotString: (value: unknown) => new InvalidJobIdentityOptionsError(`Job runKey must be a string, got ${describe(value)}`),
  runKeyLength: (length: number) => new InvalidJobIdentityOptionsError(`Job runKey must contain at most 1024 characters after trimming, got ${length}`),
  runKeyForbidden: () => new InvalidJobIdentityOptionsError('An INITIAL job has one canonical run per code and takes no runKey'),
  nameInvalid: (value: unknown) => new InvalidJobIdentityOptionsError(`Job name must be a string of at most 256 characters, got ${describe(value)}`),
  runKeysInvalid: (value: unknown, max: number) =>
    new InvalidJobIdentityOptionsError(
      `Job runKeys must be an array of at most ${max} runKeys, got ${Array.isArray(value) ? `${value.length} entries` : describe(value)}`,
    ),
  runKeysRepeated: (index: number) => new InvalidJobIdentityOptionsError(`Job runKeys must be distinct: entry ${index} names a run an earlier entry names`),
  runsInvalid: (value: unknown, max: number) =>
    new InvalidJobIdentityOptionsError(
      `acquireMany takes an array of at most ${max} acquire options, got ${Array.isArray(value) ? `${value.length} entries` : describe(value)}`,
    ),
  runsRepeated: (index: number) => new InvalidJobIdentityOptionsError(`acquireMany runs must be distinct: entry ${index} names a run an earlier entry names`),
  unstorableText: (field: string) =>
    new InvalidJobIdentityOptionsError(`Job ${field} contains a NUL character or a lone surrogate, which PostgreSQL text cannot store faithfully`),
};

export const leaseErrors = {
  leaseMs: (value: unknown) => new InvalidJobLeaseOptionsError(`leaseMs must be a safe integer from 3 to 2147483647 milliseconds, got ${describe(value)}`),
  heartbeatMsType: (value: unknown) =>
    new InvalidJobLeaseOptionsError(`heartbeatMs must be 0 or a safe integer of at most 2147483647 milliseconds, got ${describe(value)}`),
  heartbeatTooSlow: (heartbeatMs: number, leaseMs: number) =>
    new InvalidJobLeaseOptionsError(`heartbeatMs (${heartbeatMs}) must be less than half of leaseMs (${leaseMs}), or 0 to disable heartbeats`),
  statementTimeoutMs: (value: unknown) => new InvalidJobLeaseOptionsError(`timeoutMs must be a positive safe integer of milliseconds, got ${describe(value)}`),
  reclaimFailed: (value: unknown) => new InvalidJobLeaseOptionsError(`reclaimFailed must be a boolean when given, got ${describe(value)}`),
  recordHandlerMs: (value: unknown) => new InvalidJobLeaseOptionsError(`runAcquired options are { recordHandlerMs?: boolean }, got ${describe(value)}`),
  again: (value: unknown) =>
    new InvalidJobLeaseOptionsError(`again must be a boolean when given (the options of complete or fail are { again?: boolean }), got ${describe(value)}`),
  claimAgain: (value: unknown) =>
    new InvalidJobLeaseOptionsError(`the options of acquireMany are { again?: boolean } (again a boolean when given), got ${describe(value)}`),
  claimAnnounce: (value: unknown) =>
    new InvalidJobLeaseOptionsError(`announce must be a boolean when given (acquireMany's { announce?: boolean }), got ${describe(value)}`),
  ownerToken: (value: unknown) => new InvalidJobLeaseOptionsError(`ownerToken must be a UUID when given (e.g. crypto.randomUUID()), got ${describe(value)}`),
};

export const moduleErrors = {
  shutdownGraceMs: (value: unknown) =>
    new InvalidJobSchedulerModuleOptionsError(`shutdownGraceMs must be a safe integer from 0 to 2147483647 milliseconds, got ${describe(value)}`),
  retention: (field: string, value: unknown) =>
    new InvalidJobSchedulerModuleOptionsError(`retention.${field} must be a positive duration (ms, or text like '30d'), got ${describe(value)}`),
  retentionDutyCycle: (rule: string, value: unknown) =>
    new InvalidJobSchedulerModuleOptionsError(`retention.dutyCycle must be ${rule}, got ${describe(value)}`),
  statementTimeoutMs: (value: unknown) =>
    new InvalidJobSchedulerModuleOptionsError(`statementTimeoutMs must be a safe integer from 1 to 2147483647 milliseconds, got ${describe(value)}`),
  boolean: (field: string, value: unknown) => new InvalidJobSchedulerModuleOptionsError(`${field} must be a boolean when given, got ${describe(value)}`),
  duplicateModule: (count: number, difference: string) =>
    new InvalidJobSchedulerModuleOptionsError(
      `JobSchedulerModule is imported ${count} times with different options (${difference}): import JobSchedulerModule.forRoot(…) once, in the root module (it is global), or give every import the same options`,
    ),
  nodeId: (value: unknown) =>
    new InvalidJobSchedulerModuleOptionsError(`nodeId must be a nonblank string of at most 256 characters without NUL, got ${describe(value)}`),
};

export const leaseArgumentErrors = {
  invalid: (value: unknown) => new InvalidJobLeaseError(`A job lease must be { id, ownerToken } with two UUID strings, got ${describe(value)}`),
  notAcquired: (value: unknown) =>
    new InvalidJobLeaseError(`keepAlive needs what acquire returned (with leaseMs, heartbeatMs and heldUntil), got ${describe(value)}`),
};

export const dataErrors = {
  notJson: (cause: unknown) =>
    new InvalidJobDataError(`Job data must be JSON-serializable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause }),
  notAValue: (type: string) => new InvalidJobDataError(`Job data must be a JSON value or undefined, got ${type}`),
  unstorableText: () => new InvalidJobDataError('Job data contains a NUL character or a lone surrogate, which PostgreSQL jsonb cannot store'),
};

export const callbackErrors = {
  notAFunction: (value: unknown) => new InvalidJobCallbackError(`runExclusive needs a callback function as its second argument, got ${describe(value)}`),
};

const MIGRATIONS_HINT =
  "run the package's migrations first (migrations: [...JobSchedulerMigrations] in your DataSource, then migration:run), or synchronize the JobScheduler entity in development";

export const schemaErrors = {
  missing: (parts: readonly { role: string; name: string; column?: string; migration: string }[], lines: readonly string[]) =>
    new JobSchedulerSchemaError(
      `The database lacks what the job scheduler needs: ${lines.join('; ')}. Run the package's migrations before the application starts (migrations: [...JobSchedulerMigrations] in your DataSource, then migration:run, or migrationsRun: true)`,
      parts,
    ),
};

export const databaseErrors = {
  // The server's message names the relation or column (relation "job-scheduler-pause" does not exist).
  missingRelation: (operation: JobLeaseDatabaseOperation, serverMessage: string, cause: unknown) =>
    new JobLeaseDatabaseError(`A table or sequence of the job scheduler is missing (${serverMessage}): ${MIGRATIONS_HINT}`, {
      operation,
      sqlState: '42P01',
      retryable: false,
      cause,
    }),
  missingColumn: (operation: JobLeaseDatabaseOperation, serverMessage: string, cause: unknown) =>
    new JobLeaseDatabaseError(`A column of a job scheduler table is missing (${serverMessage}): ${MIGRATIONS_HINT}`, {
      operation,
      sqlState: '42703',
      retryable: false,
      cause,
    }),
  failed: (operation: JobLeaseDatabaseOperation, serverMessage: string, details: { sqlState?: string; retryable: boolean; cause: unknown }) =>
    new JobLeaseDatabaseError(`Job lease ${operation} failed: ${serverMessage}${details.sqlState ? ` (SQLSTATE ${details.sqlState})` : ''}`, {
      operation,
      ...details,
    }),
  timedOut: (operation: JobLeaseDatabaseOperation, timeoutMs: number, phase: 'connection' | 'answer') =>
    new JobLeaseDatabaseError(
      `Job lease ${operation} failed: no ${phase === 'connection' ? 'pool connection' : 'answer from the database'} within ${timeoutMs} ms`,
      { operation, retryable: true },
    ),
  notInitialized: (operation: JobLeaseDatabaseOperation) =>
    new JobLeaseDatabaseError(`Job lease ${operation} failed: the DataSource is not initialized (or was destroyed)`, {
      operation,
      retryable: false,
    }),
};

export const replicationErrors = {
  unsafe: (description: string) =>
    new JobLeaseReplicationError(
      `Refusing to grant a job lease: ${description}. A failover could forget leases and completions; configure synchronous replication, or set requireSynchronousReplication: false to accept the risk`,
    ),
};
