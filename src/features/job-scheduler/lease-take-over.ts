import type { TakeOverParameters, TakeOverRow } from './lease-take-over.sql';
import type { JobAcquiredLease } from './job-scheduler.types';
import { provenUntil } from './run/lease-deadline';
import { defaultHeartbeatMs, type ResolvedTimingDefaults } from './lease-timing';

/**
 * The scheduler's take-over of abandoned occurrences, as the lease sees it: which occurrences a
 * scan asks for (one key per job it runs), and what one claim statement returns. The statement
 * itself, and why it is safe, is takeOverAbandoned in job-scheduler.sql.ts.
 */

/** The occurrences of one job a take-over scan asks for, with what to do with them. */
export interface TakeOverKey {
  /** The job's code. */
  code: string;
  /** The runKey prefix of its occurrences: '' for a declared job, `schedule=<id> ` for a dynamic schedule. */
  prefix: string;
  /** The lease (and heartbeat) a claim runs with; by default, the row's lease and the default heartbeat for it. */
  leaseMs?: number;
  heartbeatMs?: number;
  /** Owners an occurrence may have in all: a crashed one that had them is ended, not claimed. */
  maxAttempts: number;
  /** `abandoned: 'drop'`: a crashed occurrence is ended, not claimed. */
  drop: boolean;
  /** An occurrence whose lease ran out longer ago than this is ended as late (null: never). */
  lateMs: number | null;
  /** false while the job runs here: none of its occurrences is claimed (they may be ended). */
  claimable: boolean;
}

/** An abandoned occurrence claimed for this instance: its lease, held from the claim on. */
export interface ClaimedOccurrence {
  code: string;
  runKey: string;
  /** Its last owner gave it up unstarted (expireMany) rather than vanished. */
  handedOver: boolean;
  expiredForMs: number;
  lock: JobAcquiredLease;
}

/** Why an abandoned occurrence is ended unrun: the job's 'drop', its maxAttempts, or found late. */
export type AbandonReason = 'drop' | 'attempts' | 'late';

/** An abandoned occurrence the scan must end unrun (not claimed). */
export interface OccurrenceToEnd {
  id: string;
  code: string;
  runKey: string;
  /** Owners it has had. */
  attempts: number;
  handedOver: boolean;
  expiredForMs: number;
  reason: AbandonReason;
}

/** What one take-over statement did and found. */
export interface TakeOverBatch {
  claimed: ClaimedOccurrence[];
  toEnd: OccurrenceToEnd[];
  /** (code, runKey prefix) pairs of abandoned occurrences that no key named: a dynamic schedule not known here. */
  unknown: Array<{ code: string; prefix: string }>;
}

/** The SQL parameters of one take-over claim. */
export const takeOverParameters = (
  keys: readonly TakeOverKey[],
  options: { dueBy: number; limit: number; fallbackLeaseMs: number; ownerId: string },
): TakeOverParameters => ({
  codes: keys.map((key) => key.code),
  prefixes: keys.map((key) => key.prefix),
  leaseMs: keys.map((key) => key.leaseMs ?? null),
  maxAttempts: keys.map((key) => key.maxAttempts),
  drop: keys.map((key) => key.drop),
  lateMs: keys.map((key) => key.lateMs),
  claimable: keys.map((key) => key.claimable),
  fallbackLeaseMs: options.fallbackLeaseMs,
  dueBy: new Date(options.dueBy).toISOString(),
  limit: options.limit,
  ownerId: options.ownerId,
});

/** The runKey prefix of an occurrence (as the claim statement reads it): a dynamic schedule's, or ''. */
export const runKeyPrefixOf = (runKey: string): string => /^schedule=[^ ]+ /.exec(runKey)?.[0] ?? '';

/** The map key of a (code, prefix) pair. */
export const takeOverKeyOf = (code: string, prefix: string): string => `${code}\n${prefix}`;

/**
 * The statement's rows as a batch. A claimed lease runs `leaseMs` from `sentAt` (monotonic: the
 * send, no later than the database stamped the row), with the key's heartbeat when it fits.
 */
export const takeOverBatchOf = (
  rows: readonly TakeOverRow[],
  keys: readonly TakeOverKey[],
  defaults: ResolvedTimingDefaults,
  sentAt: number,
): TakeOverBatch => {
  const byKey = new Map(keys.map((key) => [takeOverKeyOf(key.code, key.prefix), key]));
  const batch: TakeOverBatch = { claimed: [], toEnd: [], unknown: [] };
  for (const row of rows) {
    if (row.kind === 'unknown') {
      batch.unknown.push({ code: row.code, prefix: row.runKey });
    } else if (row.kind === 'end') {
      batch.toEnd.push({
        id: row.id as string,
        code: row.code,
        runKey: row.runKey,
        attempts: Number(row.attempts),
        handedOver: row.handedOver === true,
        expiredForMs: Number(row.expiredForMs),
        reason: row.reason as AbandonReason,
      });
    } else {
      const leaseMs = Number(row.leaseMs);
      const wanted = byKey.get(takeOverKeyOf(row.code, runKeyPrefixOf(row.runKey)))?.heartbeatMs;
      const fits = (heartbeatMs: number) => heartbeatMs === 0 || heartbeatMs * 2 < leaseMs;
      const configured = defaults.heartbeatMs;
      const heartbeatMs =
        wanted !== undefined && fits(wanted) ? wanted : configured !== undefined && fits(configured) ? configured : defaultHeartbeatMs(leaseMs);
      batch.claimed.push({
        code: row.code,
        runKey: row.runKey,
        handedOver: row.handedOver === true,
        expiredForMs: Number(row.expiredForMs),
        lock: {
          id: row.id as string,
          ownerToken: row.ownerToken as string,
          idempotencyKey: row.lockKey as string,
          fencingToken: Number(row.fencingToken),
          attempt: Number(row.attempts),
          reclaimed: true,
          leaseMs,
          heartbeatMs,
          heldUntil: provenUntil(sentAt, leaseMs),
        },
      });
    }
  }
  return batch;
};
