import { databaseErrors, type JobLeaseDatabaseError, type JobLeaseDatabaseOperation } from './job-scheduler.errors';
import { isRetryableSqlState } from './run/lease-deadline';
import type { LeaseSecret } from './job-scheduler.sql';

/** What stands in an error or a log line where the owner token was. */
export const REDACTED = '[redacted]';

/**
 * The fields of a PostgreSQL error that describe it without carrying statement parameters (not
 * `detail`, which may quote a row's values, nor `where`, `internalQuery` or positions).
 */
const DESCRIPTIVE_FIELDS = ['severity', 'hint', 'schema', 'table', 'column', 'constraint', 'routine'] as const;

const redact = (text: string, secret: LeaseSecret | undefined): string => {
  if (secret === undefined) return text;
  return (typeof secret === 'string' ? [secret] : secret).reduce<string>((redacted, token) => (token ? redacted.split(token).join(REDACTED) : redacted), text);
};

const textField = (error: object, field: string): string | undefined => {
  const value = (error as Record<string, unknown>)[field];
  return typeof value === 'string' ? value : undefined;
};

/** PostgreSQL's SQLSTATE when the server answered (a DatabaseError carries a severity too). */
const sqlStateOf = (error: unknown): string | undefined => {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = textField(error, 'code');
  return code !== undefined && /^[0-9A-Z]{5}$/.test(code) && textField(error, 'severity') !== undefined ? code : undefined;
};

/**
 * The driver's error rebuilt from its descriptive fields only, with `secret` (the owner token of
 * the statement) replaced wherever it appears: no parameters, no query, no stack of the driver.
 */
const sanitizedCause = (error: unknown, secret: LeaseSecret | undefined): Error => {
  if (!(error instanceof Error)) return new Error(redact(String(error), secret));
  const copy = new Error(redact(error.message, secret));
  copy.name = error.name;
  const code = textField(error, 'code');
  const fields: Record<string, string> = code === undefined ? {} : { code };
  for (const field of DESCRIPTIVE_FIELDS) {
    const value = textField(error, field);
    if (value !== undefined) fields[field] = redact(value, secret);
  }
  return Object.assign(copy, fields);
};

/**
 * Wraps whatever the driver threw for a lease statement in JobLeaseDatabaseError: SQLSTATE,
 * retryable or not, a sanitized cause, and for a missing table or column the migrations to run.
 */
export const toLeaseDatabaseError = (error: unknown, operation: JobLeaseDatabaseOperation, secret?: LeaseSecret): JobLeaseDatabaseError => {
  const sqlState = sqlStateOf(error);
  const cause = sanitizedCause(error, secret);
  if (sqlState === '42P01') return databaseErrors.missingRelation(operation, cause.message, cause);
  if (sqlState === '42703') return databaseErrors.missingColumn(operation, cause.message, cause);
  return databaseErrors.failed(operation, cause.message, { sqlState, retryable: isRetryableSqlState(sqlState), cause });
};
