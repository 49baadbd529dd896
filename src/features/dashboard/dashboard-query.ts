import { JobSchedulerStatus } from '../job-scheduler/job-scheduler.entity';
import { InvalidJobQueryOptionsError } from '../job-scheduler/job-scheduler.errors';
import type { JobRunFilter } from '../job-scheduler/operations/job-run.types';
import type { ScheduleQuery } from './dashboard-schedules';

/** A query string as both adapters give it: each value a string (or several). */
export type QueryValues = Record<string, unknown>;

const one = (query: QueryValues, name: string): string | undefined => {
  const value = Object.hasOwn(query, name) ? query[name] : undefined;
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw new InvalidJobQueryOptionsError(`${name} must be given once, as text`);
  return value;
};

const instant = (query: QueryValues, name: string): Date | undefined => {
  const text = one(query, name);
  if (text === undefined) return undefined;
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) throw new InvalidJobQueryOptionsError(`${name} must be an ISO 8601 instant, got ${JSON.stringify(text.slice(0, 80))}`);
  return date;
};

const STATUSES = new Set<string>(Object.values(JobSchedulerStatus));

/** The runs list's query (code, runKey: a prefix within that job, status, from, to, cursor, limit ≤ 200) as a findRuns filter. Throws InvalidJobQueryOptionsError. */
export const runFilterOf = (query: QueryValues): JobRunFilter => {
  const status = one(query, 'status');
  if (status !== undefined && !STATUSES.has(status))
    throw new InvalidJobQueryOptionsError(`status must be RUNNING, SUCCESS or FAIL, got ${JSON.stringify(status.slice(0, 80))}`);
  const limitText = one(query, 'limit');
  const limit = limitText === undefined ? 50 : Number(limitText);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 200) throw new InvalidJobQueryOptionsError('limit must be a whole number from 1 to 200');
  const filter: JobRunFilter = { limit };
  const code = one(query, 'code');
  if (code !== undefined) filter.code = code;
  const runKey = one(query, 'runKey');
  if (runKey !== undefined) {
    if (code === undefined) throw new InvalidJobQueryOptionsError('runKey (a run key search) needs a job: give code too');
    if (runKey.length > 512) throw new InvalidJobQueryOptionsError('runKey must be at most 512 characters');
    filter.runKeyPrefix = runKey;
  }
  if (status !== undefined) filter.status = status as JobSchedulerStatus;
  const from = instant(query, 'from');
  if (from) filter.from = from;
  const to = instant(query, 'to');
  if (to) filter.to = to;
  const cursor = one(query, 'cursor');
  if (cursor !== undefined) filter.cursor = cursor;
  return filter;
};

/** The dynamic schedules list's query: after (cursor), q (id prefix), handler, tenant; each at most 512 characters. */
export const scheduleQueryOf = (query: QueryValues): ScheduleQuery => {
  const result: ScheduleQuery = {};
  for (const [name, field] of [
    ['after', 'after'],
    ['q', 'idPrefix'],
    ['handler', 'handler'],
    ['tenant', 'tenantId'],
  ] as const) {
    const value = one(query, name);
    if (value === undefined) continue;
    if (value.length > 512) throw new InvalidJobQueryOptionsError(`${name} must be at most 512 characters`);
    result[field] = value;
  }
  return result;
};

/** The jobs list's query: a page (`after`: the previous page's cursor, `limit` 1-100) of the jobs whose name holds `q`. */
export interface JobsQuery {
  after?: string;
  q?: string;
  limit?: number;
}

/** The jobs list's query string (after, q: at most 512 characters each; limit: 1 to 100). Throws InvalidJobQueryOptionsError. */
export const jobsQueryOf = (query: QueryValues): JobsQuery => {
  const result: JobsQuery = {};
  for (const name of ['after', 'q'] as const) {
    const value = one(query, name);
    if (value === undefined) continue;
    if (value.length > 512) throw new InvalidJobQueryOptionsError(`${name} must be at most 512 characters`);
    result[name] = value;
  }
  const limitText = one(query, 'limit');
  if (limitText !== undefined) {
    const limit = Number(limitText);
    if (!/^\d{1,3}$/.test(limitText) || limit < 1 || limit > 100) throw new InvalidJobQueryOptionsError('limit must be a whole number from 1 to 100');
    result.limit = limit;
  }
  return result;
};

/** The timeline spans offered: the last hour, 6 hours, 24 hours or 7 days. */
export const TIMELINE_SPANS: Readonly<Record<string, number>> = { '1h': 3_600_000, '6h': 6 * 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };

export const timelineSpanOf = (query: QueryValues): { span: string; ms: number } => {
  const span = one(query, 'span') ?? '24h';
  const ms = Object.hasOwn(TIMELINE_SPANS, span) ? TIMELINE_SPANS[span] : undefined;
  if (ms === undefined) throw new InvalidJobQueryOptionsError(`span must be 1h, 6h, 24h or 7d, got ${JSON.stringify(span.slice(0, 20))}`);
  return { span, ms };
};

/** A fencing token as the release action takes it: the decimal the operator saw. */
export const fencingTokenOf = (query: QueryValues): number => {
  const text = one(query, 'fencingToken');
  const token = text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(token) || token < 1)
    throw new InvalidJobQueryOptionsError('fencingToken must be the fencing token shown for the lease (a whole number)');
  return token;
};
