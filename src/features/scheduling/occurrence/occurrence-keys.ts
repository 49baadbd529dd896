import { MAX_RUN_KEY_LENGTH, UNSTORABLE_TEXT } from '../../job-scheduler/job-identity';

/**
 * The lease identity of an occurrence: code = the job name, runKey = the due instant in ISO 8601
 * (plus the encoded tenant for per-tenant jobs). Every instance derives the same key for the same
 * occurrence; a run asked with runNow gets a key of its own that never collides with one.
 *
 * A tenant id enters a key as `encodeURIComponent` writes it (UTF-8, percent-encoded; letters,
 * digits and `- _ . ! ~ * ' ( )` as they are). The encoding is one-to-one and has no whitespace, so
 * distinct ids never share a key and the lease's trimming of runKeys never touches one.
 */
export const encodeTenantId = (tenantId: string): string => encodeURIComponent(tenantId);

export const occurrenceRunKey = (scheduledAt: number, tenantId?: string): string =>
  tenantId === undefined ? new Date(scheduledAt).toISOString() : `${new Date(scheduledAt).toISOString()} tenant=${encodeTenantId(tenantId)}`;

/**
 * The bound below which every occurrence key of an instant at or before `until` sorts (after a
 * dynamic schedule's prefix): the next millisecond's instant ("C" collation; a tenant suffix sorts
 * before it). Undefined (no bound) without `until`.
 */
export const keysUntil = (until: number | undefined): string | undefined => (until === undefined ? undefined : new Date(until + 1).toISOString());

export const runNowRunKey = (askedAt: number, correlationId: string, tenantId?: string): string =>
  `run-now ${new Date(askedAt).toISOString()} ${correlationId}${tenantId === undefined ? '' : ` tenant=${encodeTenantId(tenantId)}`}`;

/**
 * A dynamic schedule's occurrences: `schedule=<encoded id> <due instant>`. The id comes first so
 * that one schedule's keys are one range of IDX_job_scheduler_code_run_key (its latest occurrence
 * is one backward probe); its encoding (as a tenant id's) has no space, so no id's range holds
 * another's.
 */
export const scheduleRunKeyPrefix = (scheduleId: string): string => `schedule=${encodeURIComponent(scheduleId)} `;

/** The longest encoded schedule id a key holds (a runNow key of it included). */
export const MAX_ENCODED_SCHEDULE_ID_LENGTH = 900;

/** What names an occurrence's lease: the due instant, and the tenant or the dynamic schedule. */
export interface OccurrenceOwner {
  /** A dynamic schedule's id: its occurrences are keyed by it. */
  scheduleId?: string;
}

/** The runKey of an occurrence (or, with `runNow`, of a run asked at that instant) of a declared job or a dynamic schedule. */
export const runKeyOf = (owner: OccurrenceOwner, scheduledAt: number, tenantId?: string, runNow?: { correlationId: string }): string => {
  if (owner.scheduleId === undefined) {
    return runNow ? runNowRunKey(scheduledAt, runNow.correlationId, tenantId) : occurrenceRunKey(scheduledAt, tenantId);
  }
  const prefix = scheduleRunKeyPrefix(owner.scheduleId);
  return runNow ? `${runNowRunKey(scheduledAt, runNow.correlationId)} ${prefix.trimEnd()}` : `${prefix}${new Date(scheduledAt).toISOString()}`;
};

/** The due instant an occurrence runKey names, or null for other keys (runNow, hand-written). */
export const dueInstantOf = (runKey: string): number | null => {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)(?: tenant=.*)?$/s.exec(runKey);
  return match ? Date.parse(match[1]) : null;
};

/** The id an encoded key part names, or null when the part is not this encoding's (a key of an older release). */
const decodeKeyPart = (encoded: string): string | null => {
  try {
    const tenantId = decodeURIComponent(encoded);
    return encodeTenantId(tenantId) === encoded ? tenantId : null;
  } catch {
    return null;
  }
};

/** The schedule id a dynamic schedule's runKey prefix (`schedule=<encoded id> `) names, or null. */
export const scheduleIdOfPrefix = (prefix: string): string | null => {
  const match = /^schedule=(\S+) $/.exec(prefix);
  return match ? decodeKeyPart(match[1]) : null;
};

/**
 * The due instant and tenant an occurrence runKey names, or null for other keys (and for a tenant
 * key written by an older release whose tenant part is not in this encoding: deriving its key
 * again would name another row).
 */
export const occurrenceOfRunKey = (runKey: string): { scheduledAt: number; tenantId?: string; scheduleId?: string } | null => {
  const scheduled = /^schedule=(\S+) (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)$/.exec(runKey);
  if (scheduled) {
    const scheduleId = decodeKeyPart(scheduled[1]);
    return scheduleId === null ? null : { scheduledAt: Date.parse(scheduled[2]), scheduleId };
  }
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)(?: tenant=(.*))?$/s.exec(runKey);
  if (!match) return null;
  const scheduledAt = Date.parse(match[1]);
  if (match[2] === undefined) return { scheduledAt };
  const tenantId = decodeKeyPart(match[2]);
  return tenantId === null ? null : { scheduledAt, tenantId };
};

/** The longest runKey around a tenant: `run-now <instant> <uuid> tenant=`. */
const LONGEST_TENANT_KEY_PREFIX = `run-now ${new Date(0).toISOString()} ${'0'.repeat(36)} tenant=`.length;

/** The longest encoded tenant id a key holds: 947 characters. */
export const MAX_ENCODED_TENANT_LENGTH = MAX_RUN_KEY_LENGTH - LONGEST_TENANT_KEY_PREFIX;

/**
 * Why a tenant the directory listed cannot have a lease key, or null when it can: it must be a
 * string without NUL or lone surrogates (PostgreSQL text cannot store them, and they cannot be
 * encoded), whose encoding fits MAX_ENCODED_TENANT_LENGTH (so every key of it fits the lease's
 * 1,024 characters, a runNow key included).
 */
export const tenantIdProblem = (tenantId: unknown): string | null => {
  if (typeof tenantId !== 'string') return 'a tenant id must be a string';
  if (UNSTORABLE_TEXT.test(tenantId)) return 'it contains a NUL character or a lone surrogate, which PostgreSQL text cannot store';
  const encoded = encodeTenantId(tenantId).length;
  if (encoded > MAX_ENCODED_TENANT_LENGTH) {
    return `encoded for the lease key it takes ${encoded} characters, more than the ${MAX_ENCODED_TENANT_LENGTH} a key holds`;
  }
  return null;
};
