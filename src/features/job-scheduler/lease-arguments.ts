import { dataErrors, InvalidJobDataError, leaseArgumentErrors, leaseErrors } from './job-scheduler.errors';
import { type JobIdentity, ownValue, resolveJobIdentity, UNSTORABLE_TEXT } from './job-identity';
import { type LeaseTiming, resolveLeaseTiming, type ResolvedTimingDefaults } from './lease-timing';
import type { JobLease } from './job-scheduler.types';
import { DEFAULT_LEASE_MS } from './job-scheduler.constants';

const UNSTORABLE_ALL = new RegExp(UNSTORABLE_TEXT.source, 'gu');

/** A UUID in its canonical text form. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Checks a `{ id, ownerToken }` argument before it reaches SQL. Throws InvalidJobLeaseError. */
export const checkJobLease = (lease: unknown): JobLease => {
  if (typeof lease !== 'object' || lease === null) throw leaseArgumentErrors.invalid(lease);
  const id = ownValue(lease, 'id');
  const ownerToken = ownValue(lease, 'ownerToken');
  if (typeof id !== 'string' || typeof ownerToken !== 'string' || !UUID.test(id) || !UUID.test(ownerToken)) {
    throw leaseArgumentErrors.invalid(lease);
  }
  return { id, ownerToken };
};

/**
 * Turns finalize data into JSONB text, or null when there is none. Refuses, before any SQL, what
 * JSON cannot express (circular structures, BigInt, a bare function or symbol) and text that
 * PostgreSQL jsonb rejects (NUL, lone surrogates). Throws InvalidJobDataError.
 */
export const serializeJobData = (data: unknown): string | null => {
  if (data === undefined) return null;
  if (typeof data === 'function' || typeof data === 'symbol') throw dataErrors.notAValue(typeof data);
  let text: string | undefined;
  try {
    text = JSON.stringify(data, (key: string, value: unknown) => {
      if (UNSTORABLE_TEXT.test(key) || (typeof value === 'string' && UNSTORABLE_TEXT.test(value))) throw dataErrors.unstorableText();
      return value;
    });
  } catch (error) {
    throw error instanceof InvalidJobDataError ? error : dataErrors.notJson(error);
  }
  if (text === undefined) throw dataErrors.notAValue(typeof data);
  return text;
};

/** `read()` as text, or `fallback` when reading or converting it throws. */
const textOf = (read: () => unknown, fallback: string): string => {
  try {
    return String(read());
  } catch {
    return fallback;
  }
};

const isError = (value: unknown): value is Error => {
  try {
    return value instanceof Error;
  } catch {
    // A Proxy whose getPrototypeOf trap throws.
    return false;
  }
};

/**
 * A thrown value as JSON-safe data: name and message for errors, the string form otherwise.
 * Never throws, whatever was thrown (an object without prototype, a throwing getter or
 * toString), so that the FAIL of such a callback is still recorded.
 */
/** runAcquired's options, checked: whether to record the callback's run time. Throws InvalidJobLeaseOptionsError. */
export const checkRunAcquiredOptions = (options: unknown): boolean => {
  if (options === undefined) return false;
  if (typeof options !== 'object' || options === null) throw leaseErrors.recordHandlerMs(options);
  for (const key of Object.keys(options)) if (key !== 'recordHandlerMs') throw leaseErrors.recordHandlerMs(options);
  const record = ownValue(options, 'recordHandlerMs');
  if (record !== undefined && typeof record !== 'boolean') throw leaseErrors.recordHandlerMs(options);
  return record === true;
};

export const describeFailure = (error: unknown): { error: { name: string; message: string } } => {
  const thrownError = isError(error);
  const name = thrownError ? textOf(() => error.name, 'Error') : typeof error;
  const message = thrownError ? textOf(() => error.message, '') : textOf(() => String(error), `unprintable ${typeof error}`);
  const clean = (text: string) => text.replace(UNSTORABLE_ALL, '\uFFFD');
  return { error: { name: clean(name), message: clean(message) } };
};

export interface AcquireRequest extends LeaseTiming {
  identity: JobIdentity;
  reclaimFailed: boolean;
  /** The owner token the caller drew for the run (acquireMany), if any. */
  ownerToken?: string;
}

/** acquireMany's run: acquire's options, plus the `ownerToken` the run gets if won (a UUID), when the caller draws it. */
export const resolveClaimRequest = (options: unknown, defaults: ResolvedTimingDefaults): AcquireRequest => resolveAcquireRequest(options, defaults, true);

/** The optional `{ again }` of acquireMany: a boolean when given. */
export const checkClaimAgain = (options: unknown): boolean => checkAgain(options, leaseErrors.claimAgain);

/** The optional `{ announce }` of acquireMany (checked after checkClaimAgain): a boolean when given. */
export const checkClaimAnnounce = (options: unknown): boolean => {
  const value = options === undefined ? undefined : ownValue(options as object, 'announce');
  if (value !== undefined && typeof value !== 'boolean') throw leaseErrors.claimAnnounce(value);
  return value === true;
};

/**
 * Everything an acquire needs, validated in order (identity first, then timing), before any SQL.
 * Throws InvalidJobIdentityOptionsError or InvalidJobLeaseOptionsError.
 */
export const resolveAcquireRequest = (options: unknown, defaults: ResolvedTimingDefaults, withOwnerToken = false): AcquireRequest => {
  const identity = resolveJobIdentity(options);
  const source = options as object;
  const { leaseMs, heartbeatMs } = resolveLeaseTiming(source, defaults);
  const rawReclaimFailed = ownValue(source, 'reclaimFailed');
  if (rawReclaimFailed !== undefined && typeof rawReclaimFailed !== 'boolean') {
    throw leaseErrors.reclaimFailed(rawReclaimFailed);
  }
  const ownerToken = withOwnerToken ? ownValue(source, 'ownerToken') : undefined;
  if (ownerToken !== undefined && (typeof ownerToken !== 'string' || !UUID.test(ownerToken))) throw leaseErrors.ownerToken(ownerToken);
  // One object of one shape, token or not: built per run, 100,000 times at an instant of a large fleet.
  return { identity, leaseMs, heartbeatMs, reclaimFailed: rawReclaimFailed ?? true, ownerToken: ownerToken?.toLowerCase() };
};

/**
 * Checks what keepAlive needs of an acquire result: `{ id, ownerToken }` (InvalidJobLeaseError),
 * its lease timing (InvalidJobLeaseOptionsError) and a finite `heldUntil`.
 */
export const checkAcquiredLease = (lock: unknown): JobLease & { leaseMs: number; heartbeatMs: number; heldUntil: number } => {
  const lease = checkJobLease(lock);
  const source = lock as object;
  const timing = resolveLeaseTiming(
    { leaseMs: ownValue(source, 'leaseMs') ?? null, heartbeatMs: ownValue(source, 'heartbeatMs') ?? null },
    { leaseMs: DEFAULT_LEASE_MS },
  );
  const heldUntil = ownValue(source, 'heldUntil');
  if (typeof heldUntil !== 'number' || !Number.isFinite(heldUntil)) throw leaseArgumentErrors.notAcquired(lock);
  return { ...lease, ...timing, heldUntil };
};

/** The optional `{ timeoutMs }` of one heartbeat: a positive safe integer when given. */
export const checkStatementTimeout = (options: unknown): number | undefined => {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null) throw leaseErrors.statementTimeoutMs(options);
  const value = ownValue(options, 'timeoutMs');
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw leaseErrors.statementTimeoutMs(value);
  return value as number;
};

/** The optional `{ again }` of complete and fail: a boolean when given. */
export const checkFinalizeAgain = (options: unknown): boolean => checkAgain(options, leaseErrors.again);

/** Options `{ again?: boolean }`: whether `again` is true; `invalid` names what is wrong otherwise. */
const checkAgain = (options: unknown, invalid: (value: unknown) => Error): boolean => {
  if (options === undefined) return false;
  if (typeof options !== 'object' || options === null) throw invalid(options);
  const value = ownValue(options, 'again');
  if (value !== undefined && typeof value !== 'boolean') throw invalid(value);
  return value === true;
};
