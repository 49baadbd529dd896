import * as crypto from 'node:crypto';
import { JobSchedulerType } from './job-scheduler.entity';
import { identityErrors } from './job-scheduler.errors';

/** A validated, canonical identity of one logical run. */
export interface JobIdentity {
  type: JobSchedulerType;
  code: string;
  /** Null for INITIAL. */
  runKey: string | null;
  name: string | null;
  /** `v2:` + base64url(SHA-256(JSON)); the unique lock key and the idempotency key. */
  lockKey: string;
}

export const MAX_CODE_LENGTH = 64;
export const MAX_RUN_KEY_LENGTH = 1024;
export const MAX_NAME_LENGTH = 256;

const TYPES: ReadonlySet<unknown> = new Set(Object.values(JobSchedulerType));
/**
 * Text PostgreSQL cannot store as given: NUL is refused by text and jsonb; a lone surrogate is
 * stored (and hashed) as U+FFFD in text, so two different keys would collide, and refused by jsonb.
 */
// eslint-disable-next-line no-control-regex -- NUL is what PostgreSQL text cannot store
export const UNSTORABLE_TEXT = /\u0000|\p{Cs}/u;

/** Length in code points, as PostgreSQL counts varchar(n). */
const lengthOf = (text: string): number => {
  let count = 0;
  for (const _ of text) count++;
  return count;
};

/**
 * lengthOf where it can matter: a text of at most `max` UTF-16 units has at most `max` code points
 * (and none only when empty), so its exact count is not needed to judge it against 1..max.
 */
const lengthWithin = (text: string, max: number): number => (text.length <= max ? text.length : lengthOf(text));

/** Reads an own property only, so a polluted prototype cannot supply identity fields. */
export const ownValue = (source: object, key: string): unknown =>
  Object.prototype.hasOwnProperty.call(source, key) ? (source as Record<string, unknown>)[key] : undefined;

/** crypto.hash (Node 20.12 and later): a one-shot digest, without a Hash object per key. */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, outputEncoding: 'base64url') => string }).hash;

/** Unpadded base64url SHA-256 of the UTF-8 of `text`. */
const sha256Base64url = (text: string): string =>
  oneShotHash ? oneShotHash('sha256', text, 'base64url') : crypto.createHash('sha256').update(text, 'utf8').digest('base64url');

/**
 * The v2 key: `v2:` + unpadded base64url SHA-256 of `{"version":2,"type","code","runKey"}` (the
 * text JSON.stringify writes for that object, written field by field: one key per claim).
 */
export const buildLockKey = (type: JobSchedulerType, code: string, runKey: string | null): string =>
  `v2:${sha256Base64url(`{"version":2,"type":${JSON.stringify(type)},"code":${JSON.stringify(code)},"runKey":${JSON.stringify(runKey)}}`)}`;

/**
 * Validates the identity fields of acquire options, also for untyped callers, and builds the key.
 * Throws InvalidJobIdentityOptionsError; never touches the database.
 */
export const resolveJobIdentity = (options: unknown): JobIdentity => {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw identityErrors.notAnObject(options);
  }

  const rawCode = ownValue(options, 'code');
  if (typeof rawCode !== 'string') throw identityErrors.codeNotString(rawCode);
  const code = rawCode.trim();
  const codeLength = lengthWithin(code, MAX_CODE_LENGTH);
  if (codeLength < 1 || codeLength > MAX_CODE_LENGTH) throw identityErrors.codeLength(codeLength);
  if (UNSTORABLE_TEXT.test(code)) throw identityErrors.unstorableText('code');

  const rawType = ownValue(options, 'type');
  const type = rawType === undefined ? JobSchedulerType.SCHEDULE : rawType;
  if (!TYPES.has(type)) throw identityErrors.unknownType(rawType);

  const rawRunKey = ownValue(options, 'runKey');
  let runKey: string | null = null;
  if (type === JobSchedulerType.INITIAL) {
    if (rawRunKey !== undefined) throw identityErrors.runKeyForbidden();
  } else {
    if (rawRunKey === undefined) throw identityErrors.runKeyRequired();
    if (typeof rawRunKey !== 'string') throw identityErrors.runKeyNotString(rawRunKey);
    runKey = rawRunKey.trim();
    if (runKey.length === 0) throw identityErrors.runKeyRequired();
    const runKeyLength = lengthWithin(runKey, MAX_RUN_KEY_LENGTH);
    if (runKeyLength > MAX_RUN_KEY_LENGTH) throw identityErrors.runKeyLength(runKeyLength);
    if (UNSTORABLE_TEXT.test(runKey)) throw identityErrors.unstorableText('runKey');
  }

  const rawName = ownValue(options, 'name');
  let name: string | null = null;
  if (rawName !== undefined) {
    if (typeof rawName !== 'string' || lengthWithin(rawName, MAX_NAME_LENGTH) > MAX_NAME_LENGTH) throw identityErrors.nameInvalid(rawName);
    if (UNSTORABLE_TEXT.test(rawName)) throw identityErrors.unstorableText('name');
    name = rawName;
  }

  const jobType = type as JobSchedulerType;
  return { type: jobType, code, runKey, name, lockKey: buildLockKey(jobType, code, runKey) };
};
