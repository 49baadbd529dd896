import { parseInterval } from '../duration';
import { JobSchedulerStatus, JobSchedulerType } from '../job-scheduler.entity';
import { InvalidJobQueryOptionsError } from '../job-scheduler.errors';
import type { FindRunsParameters, PruneParameters, RunRow } from './operations.sql';
import type { JobPruneOptions, JobRunFilter, JobRunView } from './job-run.types';
import { ownValue } from '../job-identity';
import { UUID } from '../lease-arguments';
import { PRUNE_DUTY_CYCLE_RULE, pruneDutyCycleOf } from './prune-pacing';

const STATUSES = new Set<unknown>(Object.values(JobSchedulerStatus));
const TYPES = new Set<unknown>(Object.values(JobSchedulerType));

const invalid = (what: string, value: unknown) =>
  new InvalidJobQueryOptionsError(`${what}, got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`);

const optionalEnum = (value: unknown, allowed: Set<unknown>, what: string): string | null => {
  if (value === undefined) return null;
  if (!allowed.has(value)) throw invalid(what, value);
  return value as string;
};

const optionalDate = (value: unknown, what: string): Date | null => {
  if (value === undefined) return null;
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw invalid(`${what} must be a valid Date`, value);
  return value;
};

const count = (value: unknown, what: string, fallback: number, max: number): number => {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > max) throw invalid(`${what} must be a whole number from 1 to ${max}`, value);
  return value as number;
};

const dutyCycle = (value: unknown): number => {
  const checked = pruneDutyCycleOf(value);
  if (checked === null) throw invalid(`dutyCycle must be ${PRUNE_DUTY_CYCLE_RULE}`, value);
  return checked;
};

export const encodeCursor = (row: RunRow): string => Buffer.from(JSON.stringify([row.createdAtExact, row.id])).toString('base64url');

const decodeCursor = (cursor: unknown): FindRunsParameters['after'] => {
  if (cursor === undefined) return null;
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(String(cursor), 'base64url').toString('utf8')) as unknown[];
    if (typeof createdAt === 'string' && !Number.isNaN(Date.parse(createdAt)) && typeof id === 'string' && UUID.test(id)) {
      return { createdAt, id };
    }
  } catch {
    // falls through to the error below
  }
  throw invalid('cursor must be a nextCursor returned by findRuns', cursor);
};

/** Validates a findRuns filter before any SQL. Throws InvalidJobQueryOptionsError. */
export const resolveRunFilter = (filter: JobRunFilter = {}): FindRunsParameters => {
  if (typeof filter !== 'object' || filter === null) throw invalid('the filter must be an object', filter);
  const code = ownValue(filter, 'code');
  if (code !== undefined && (typeof code !== 'string' || code.trim() === '' || code.length > 64)) {
    throw invalid('code must be a nonblank string of at most 64 characters', code);
  }
  const runKeyPrefix = ownValue(filter, 'runKeyPrefix');
  if (runKeyPrefix !== undefined && (typeof runKeyPrefix !== 'string' || runKeyPrefix === '' || runKeyPrefix.length > 512)) {
    throw invalid('runKeyPrefix must be a nonempty string of at most 512 characters', runKeyPrefix);
  }
  if (runKeyPrefix !== undefined && code === undefined) throw invalid('runKeyPrefix needs a code (the run key search is within one job)', runKeyPrefix);
  return {
    code: code === undefined ? null : code.trim(),
    runKeyPrefix: runKeyPrefix ?? null,
    status: optionalEnum(ownValue(filter, 'status'), STATUSES, 'status must be RUNNING, SUCCESS or FAIL'),
    type: optionalEnum(ownValue(filter, 'type'), TYPES, 'type must be INITIAL or SCHEDULE'),
    createdFrom: optionalDate(ownValue(filter, 'from'), 'from'),
    createdBefore: optionalDate(ownValue(filter, 'to'), 'to'),
    after: decodeCursor(ownValue(filter, 'cursor')),
    limit: count(ownValue(filter, 'limit'), 'limit', 100, 1_000),
  };
};

/** Validates prune options before any SQL. Throws InvalidJobQueryOptionsError. */
export const resolvePruneOptions = (options: JobPruneOptions): PruneParameters & { limit: number | null; dutyCycle: number } => {
  if (typeof options !== 'object' || options === null) throw invalid('prune options must be an object', options);
  const olderThanMs = parseInterval(ownValue(options, 'olderThan'));
  if (olderThanMs === null) throw invalid("olderThan must be a positive duration (ms, or text like '30d')", ownValue(options, 'olderThan'));
  const rawStatus = ownValue(options, 'status');
  const statuses = rawStatus === undefined ? [JobSchedulerStatus.SUCCESS, JobSchedulerStatus.FAIL] : Array.isArray(rawStatus) ? rawStatus : [rawStatus];
  if (statuses.length === 0 || statuses.some((status) => status !== JobSchedulerStatus.SUCCESS && status !== JobSchedulerStatus.FAIL)) {
    throw invalid('status must be SUCCESS, FAIL or both (RUNNING rows are never pruned)', rawStatus);
  }
  const dangerous = ownValue(options, 'dangerouslyDeleteRunOnceSuccess');
  if (dangerous !== undefined && typeof dangerous !== 'boolean') throw invalid('dangerouslyDeleteRunOnceSuccess must be a boolean', dangerous);
  const rawLimit = ownValue(options, 'limit');
  const rawCode = ownValue(options, 'code');
  const codes = rawCode === undefined ? null : Array.isArray(rawCode) ? (rawCode as unknown[]) : [rawCode];
  if (
    codes !== null &&
    (codes.length === 0 || codes.length > 10_000 || codes.some((code) => typeof code !== 'string' || code.trim() === '' || code.trim().length > 64))
  ) {
    throw invalid('code must be a job code (1-64 characters) or a list of 1 to 10,000 of them', rawCode);
  }
  return {
    codes: codes === null ? null : (codes as string[]).map((code) => code.trim()),
    statuses: statuses as string[],
    type: optionalEnum(ownValue(options, 'type'), TYPES, 'type must be INITIAL or SCHEDULE'),
    olderThanMs,
    includeRunOnceSuccess: dangerous === true,
    batchSize: count(ownValue(options, 'batchSize'), 'batchSize', 1_000, 100_000),
    limit: rawLimit === undefined ? null : count(rawLimit, 'limit', 1, Number.MAX_SAFE_INTEGER),
    dutyCycle: dutyCycle(ownValue(options, 'dutyCycle')),
  };
};

export const toRunView = (row: RunRow): JobRunView => ({
  id: row.id,
  idempotencyKey: row.lockKey,
  code: row.code,
  name: row.name,
  type: row.type as JobSchedulerType,
  status: row.status as JobSchedulerStatus,
  runKey: row.runKey,
  attempts: row.attempts,
  fencingToken: Number(row.fencingToken),
  ownerId: row.ownerId,
  leaseMs: row.leaseMs,
  createdAt: row.createdAt,
  modifiedAt: row.modifiedAt,
  startedAt: row.startedAt,
  finishedAt: row.finishedAt,
  data: row.data,
  lastError: row.lastError,
  heartbeatAgeMs: Number(row.heartbeatAgeMs),
});
