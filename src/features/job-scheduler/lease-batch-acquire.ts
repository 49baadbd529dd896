import { identityErrors, JobLeaseDatabaseError } from './job-scheduler.errors';
import type { AcquireBatchRow, LeaseStatements, SqlStatement } from './job-scheduler.sql';
import type { JobAcquireResult } from './job-scheduler.types';
import { ownValue } from './job-identity';
import { type AcquireRequest, resolveAcquireRequest, resolveClaimRequest } from './lease-arguments';
import { monotonicNow, provenUntil } from './run/lease-deadline';
import type { LeaseTelemetry } from './telemetry/lease-telemetry';
import type { ResolvedTimingDefaults } from './lease-timing';

/** The most runs one batch acquire claims: one statement's parameters stay small. */
export const MAX_BATCH_RUN_KEYS = 1_000;

/** The fields a batch shares: everything of JobAcquireOptions but the runKey. */
const SHARED_FIELDS = ['code', 'name', 'type', 'leaseMs', 'heartbeatMs', 'reclaimFailed'] as const;

/**
 * Validates `{ code, runKeys, ...timing }` like acquire validates each of its runs (same errors,
 * same defaults), plus: runKeys an array of at most MAX_BATCH_RUN_KEYS, naming distinct runs.
 * One request per runKey, in order. Throws before any SQL.
 */
export const resolveBatchAcquireRequests = (options: unknown, defaults: ResolvedTimingDefaults): AcquireRequest[] => {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw identityErrors.notAnObject(options);
  const runKeys = ownValue(options, 'runKeys');
  if (!Array.isArray(runKeys) || runKeys.length > MAX_BATCH_RUN_KEYS) throw identityErrors.runKeysInvalid(runKeys, MAX_BATCH_RUN_KEYS);
  const shared: Record<string, unknown> = {};
  for (const field of SHARED_FIELDS) {
    const value = ownValue(options, field);
    if (value !== undefined) shared[field] = value;
  }
  // With no runKey, the shared fields are still checked (an INITIAL type refuses any runKey).
  if (runKeys.length === 0) resolveAcquireRequest({ ...shared, runKey: 'none' }, defaults);
  const lockKeys = new Set<string>();
  const requests: AcquireRequest[] = [];
  for (let index = 0; index < runKeys.length; index++) {
    const request = resolveAcquireRequest({ ...shared, runKey: runKeys[index] as unknown }, defaults);
    if (lockKeys.has(request.identity.lockKey)) throw identityErrors.runKeysRepeated(index);
    lockKeys.add(request.identity.lockKey);
    requests.push(request);
  }
  return requests;
};

/**
 * Validates the runs of `acquireMany` like acquire validates each (same errors, same defaults),
 * plus: an array of at most MAX_BATCH_RUN_KEYS naming distinct runs, each `ownerToken` a UUID
 * when given. Throws before any SQL.
 */
export const resolveManyAcquireRequests = (runs: unknown, defaults: ResolvedTimingDefaults): AcquireRequest[] => {
  if (!Array.isArray(runs) || runs.length > MAX_BATCH_RUN_KEYS) throw identityErrors.runsInvalid(runs, MAX_BATCH_RUN_KEYS);
  const lockKeys = new Set<string>();
  return runs.map((run: unknown, index) => {
    const request = resolveClaimRequest(run, defaults);
    if (lockKeys.has(request.identity.lockKey)) throw identityErrors.runsRepeated(index);
    lockKeys.add(request.identity.lockKey);
    return request;
  });
};

/** What a batch acquire needs of the service that runs it. */
export interface BatchAcquireContext {
  ownerId: string;
  statements: LeaseStatements;
  telemetry: LeaseTelemetry;
  execute(statement: SqlStatement): Promise<AcquireBatchRow[]>;
  /** Whether the runs won are announced (see claim-announcements.ts). */
  announce: boolean;
}

/** The outcome label of one run: acquired | reclaimed | held (RUNNING, or a concurrent insert) | success-locked | fail-locked. */
export const acquireOutcome = (row: Pick<AcquireBatchRow, 'id' | 'reclaimed' | 'status'> | undefined): string => {
  if (row?.id) return row.reclaimed ? 'reclaimed' : 'acquired';
  if (row?.status === 'SUCCESS') return 'success-locked';
  if (row?.status === 'FAIL') return 'fail-locked';
  return 'held';
};

export const NOT_ACQUIRED: JobAcquireResult = Object.freeze({ acquired: false });

/** SQLSTATE 40001: a stricter isolation level saw a concurrent winner. For an acquire, a lost race. */
export const isSerializationFailure = (error: unknown): boolean => error instanceof JobLeaseDatabaseError && error.sqlState === '40001';

/**
 * Claims the runs of `requests` (validated; distinct lock keys; one type and one reclaimFailed,
 * codes and leases may differ) in one statement: each run is acquired or not by acquire's own
 * rules; results in the order of the requests. A serialization failure (a stricter isolation
 * level saw a concurrent winner) is "none acquired", as for acquire; any other database error is
 * thrown. `again`: a retry of a claim whose answer was lost; a run RUNNING under the owner token
 * its request names is won again (see the statement).
 */
export const acquireBatch = async (requests: readonly AcquireRequest[], context: BatchAcquireContext, again = false): Promise<JobAcquireResult[]> => {
  const [first] = requests;
  if (!first) return [];
  const codes = requests.map((request) => request.identity.code);
  const code = codes.every((each) => each === first.identity.code) ? first.identity.code : `${first.identity.code} (+${new Set(codes).size - 1} codes)`;
  const statement = context.statements.acquireBatch({
    lockKeys: requests.map((request) => request.identity.lockKey),
    runKeys: requests.map((request) => request.identity.runKey as string),
    codes,
    names: requests.map((request) => request.identity.name),
    leaseMs: requests.map((request) => request.leaseMs),
    type: first.identity.type,
    ownerId: context.ownerId,
    reclaimFailed: first.reclaimFailed,
    // null, not an array of nulls, when the database draws every token (unnest pads it).
    ownerTokens: requests.some((request) => request.ownerToken !== undefined) ? requests.map((request) => request.ownerToken ?? null) : null,
    again,
    announce: context.announce,
  });
  // Every lease of the batch runs from its row's modifiedAt, stamped no earlier than this send.
  const sentAt = monotonicNow();
  const rows = await context.telemetry.observe(
    'acquire-batch',
    { code },
    async () => {
      try {
        return await context.execute(statement);
      } catch (error) {
        if (isSerializationFailure(error)) return [];
        throw error;
      }
    },
    (found) => (found.some((row) => row.id !== null) ? 'acquired' : 'held'),
  );
  const byKey = new Map(rows.map((row) => [row.lockKey, row]));
  return requests.map((request): JobAcquireResult => {
    const row = byKey.get(request.identity.lockKey);
    context.telemetry.count('acquire', acquireOutcome(row));
    if (!row?.id || !row.ownerToken) return NOT_ACQUIRED;
    // The token the request named, when the row has it: the string read back is a second copy of
    // it, and the scheduler keeps a won claim's lease until its run ends.
    const ownerToken = request.ownerToken === row.ownerToken ? request.ownerToken : row.ownerToken;
    return acquiredResult(request, { ...row, id: row.id }, ownerToken, sentAt);
  });
};

/**
 * acquireBatch for runs of any codes and leases: one statement per kind of run (type and
 * reclaimFailed; usually one), results in the order of the requests.
 */
export const acquireGrouped = async (requests: readonly AcquireRequest[], context: BatchAcquireContext, again = false): Promise<JobAcquireResult[]> => {
  const groups = new Map<string, number[]>();
  requests.forEach((request, index) => {
    const kind = `${request.identity.type} ${request.reclaimFailed}`;
    const indexes = groups.get(kind);
    if (indexes) indexes.push(index);
    else groups.set(kind, [index]);
  });
  const results = new Array<JobAcquireResult>(requests.length);
  for (const indexes of groups.values()) {
    const claimed = await acquireBatch(
      indexes.map((index) => requests[index]),
      context,
      again,
    );
    indexes.forEach((index, position) => (results[index] = claimed[position]));
  }
  return results;
};

/** What acquireUnheard asks of the announcements heard. */
export interface HeardClaims {
  heardWithin(lockKey: string, withinMs: number): boolean;
}

/**
 * acquireGrouped, announced, without the runs another instance announced it won within the last
 * half of their lease: those are not acquired, without a statement (a claim would lose to that
 * row, still RUNNING by then: its lease runs from its claim). A retry (`again`) and a claim over
 * a FAIL row (`reclaimFailed`) are always sent: this instance's own rows may be what was heard.
 */
export const acquireUnheard = async (
  requests: readonly AcquireRequest[],
  heard: HeardClaims,
  context: BatchAcquireContext,
  again = false,
): Promise<JobAcquireResult[]> => {
  const results = new Array<JobAcquireResult>(requests.length);
  const sent: AcquireRequest[] = [];
  const sentAt: number[] = [];
  requests.forEach((request, index) => {
    if (!again && !request.reclaimFailed && heard.heardWithin(request.identity.lockKey, request.leaseMs / 2)) {
      context.telemetry.count('acquire', 'heard');
      results[index] = NOT_ACQUIRED;
    } else {
      sent.push(request);
      sentAt.push(index);
    }
  });
  if (sent.length === 0) return results;
  const claimed = await acquireGrouped(sent, context, again);
  sentAt.forEach((index, position) => (results[index] = claimed[position]));
  return results;
};

/** What a winner of acquire or of a batch claim gets: its row's fencing data, its timing, and the local deadline. */
export const acquiredResult = (
  request: AcquireRequest,
  row: { id: string; fencingToken: string | null; attempts: number | null; reclaimed: boolean | null },
  ownerToken: string,
  sentAt: number,
): JobAcquireResult => ({
  acquired: true,
  id: row.id,
  ownerToken,
  idempotencyKey: request.identity.lockKey,
  fencingToken: Number(row.fencingToken),
  attempt: row.attempts as number,
  reclaimed: row.reclaimed === true,
  leaseMs: request.leaseMs,
  heartbeatMs: request.heartbeatMs,
  heldUntil: provenUntil(sentAt, request.leaseMs),
});
