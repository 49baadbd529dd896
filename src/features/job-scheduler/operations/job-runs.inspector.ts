import { Inject, Injectable, Optional } from '@nestjs/common';
import { encodeCursor, resolveRunFilter, toRunView } from './job-run-arguments';
import type { ExpiredJobLease, JobRunFilter, JobRunPage, JobRunView } from './job-run.types';
import { JOB_SCHEDULER_DATA_SOURCE } from '../job-scheduler.constants';
import { JobSchedulerExecutor } from '../job-scheduler.executor';
import { JOB_SCHEDULER_MODULE_OPTIONS } from '../job-scheduler.module-definition';
import type { JobSchedulerRuntimeOptions } from '../job-scheduler.options';
import { InvalidJobQueryOptionsError } from '../job-scheduler.errors';
import type { HealthStateRow, HealthWindowRow, LatestOccurrenceRow, OccurrenceRow } from './occurrence-history.sql';
import type { RunRow } from './operations.sql';
import type { JobAcquireOptions } from '../job-scheduler.types';
import { MAX_CODE_LENGTH, MAX_RUN_KEY_LENGTH, resolveJobIdentity, UNSTORABLE_TEXT } from '../job-identity';
import type { JobSchedulerDatabase } from '../lease-database';
import { resolveTimingDefaults } from '../lease-timing';
import { UUID } from '../lease-arguments';

/** Pairs one health-window statement reads at most (as many codes as a run search takes; a page of schedules is 100). */
const MAX_HEALTH_PAIRS = 10_000;

const checkRunId = (id: unknown): string => {
  if (typeof id !== 'string' || !UUID.test(id))
    throw new InvalidJobQueryOptionsError(`a run id must be a UUID, got ${JSON.stringify(String(id).slice(0, 80))}`);
  return id;
};

/** A job code as the health reads take it (else InvalidJobQueryOptionsError, before any SQL). */
const checkCode = (code: unknown, method: string): void => {
  if (typeof code !== 'string' || code === '' || code.length > MAX_CODE_LENGTH || UNSTORABLE_TEXT.test(code)) {
    throw new InvalidJobQueryOptionsError(`${method} needs job codes of 1 to ${MAX_CODE_LENGTH} characters, got ${JSON.stringify(String(code).slice(0, 80))}`);
  }
};

/** Jobs whose state one healthStates call reads at most (about 10 index entries each). */
const MAX_HEALTH_STATES = 100_000;

/**
 * Views of the lease table for operators: runs by code / status / time with keyset pagination,
 * one logical run by its identity or id, a job's occurrences in a span, and the RUNNING leases
 * past their lease; and one write, the release of a stuck lease (fenced on its fencing token).
 * Typed results; owner tokens are never read.
 */
@Injectable()
export class JobRunsInspector {
  private readonly executor: JobSchedulerExecutor;
  private readonly defaultLeaseMs: number;

  constructor(
    @Inject(JOB_SCHEDULER_DATA_SOURCE) dataSource: JobSchedulerDatabase,
    @Optional() @Inject(JOB_SCHEDULER_MODULE_OPTIONS) options: JobSchedulerRuntimeOptions = {},
  ) {
    // The module's statement settings: behind PgBouncer in transaction pooling, no named statements.
    this.executor = new JobSchedulerExecutor(dataSource, { preparedStatements: options.preparedStatements, statementTimeoutMs: options.statementTimeoutMs });
    this.defaultLeaseMs = resolveTimingDefaults(options.defaults).leaseMs;
  }

  /** Runs matching the filter, newest first (by createdAt), `limit` at a time. */
  async findRuns(filter: JobRunFilter = {}): Promise<JobRunPage> {
    const parameters = resolveRunFilter(filter);
    const rows = await this.executor.rows<RunRow>(this.executor.statements.findRuns({ ...parameters, limit: parameters.limit + 1 }));
    const page = rows.slice(0, parameters.limit);
    const last = page[page.length - 1];
    return rows.length > parameters.limit && last ? { runs: page.map(toRunView), nextCursor: encodeCursor(last) } : { runs: page.map(toRunView) };
  }

  /** The logical run `{ type, code, runKey }` (validated like an acquire), or null. */
  async getRun(identity: Pick<JobAcquireOptions, 'code' | 'runKey' | 'type'>): Promise<JobRunView | null> {
    const { lockKey } = resolveJobIdentity(identity);
    const [row] = await this.executor.rows<RunRow>(this.executor.statements.runByKey(lockKey));
    return row ? toRunView(row) : null;
  }

  /** One run by its id (a UUID, else InvalidJobQueryOptionsError before any SQL), or null. */
  async getRunById(id: string): Promise<JobRunView | null> {
    const [row] = await this.executor.rows<RunRow>(this.executor.statements.runById(checkRunId(id)));
    return row ? toRunView(row) : null;
  }

  /**
   * A job's occurrences due in [from, to), and its runNow runs asked then, newest first: at most
   * `limit` of each. With `runKeyPrefix` (a dynamic schedule's `schedule=<id> `), that schedule's
   * occurrences only, their keys as stored.
   */
  async findOccurrences(code: string, from: Date, to: Date, limit: number, runKeyPrefix?: string): Promise<OccurrenceRow[]> {
    const { code: checked, createdFrom, createdBefore } = resolveRunFilter({ code, from, to });
    if (checked === null || createdFrom === null || createdBefore === null || !Number.isSafeInteger(limit) || limit < 1 || limit > 100_000) {
      throw new InvalidJobQueryOptionsError('findOccurrences needs a code, from, to and a limit from 1 to 100,000');
    }
    const [fromKey, toKey] = [createdFrom.toISOString(), createdBefore.toISOString()];
    const statement =
      runKeyPrefix === undefined
        ? this.executor.statements.occurrencesBetween(checked, fromKey, toKey, limit)
        : this.executor.statements.scheduleOccurrencesBetween(checked, runKeyPrefix, fromKey, toKey, limit);
    return this.executor.rows<OccurrenceRow>(statement);
  }

  /**
   * The health window of each of `codes` over its newest `limit` (1-1,000) occurrences, the day
   * starting at `dayFrom`: one row per code (zeros and nulls for a code without occurrences), in one
   * statement computed by PostgreSQL.
   */
  async healthWindows(codes: readonly string[], limit: number, dayFrom: Date): Promise<Map<string, HealthWindowRow>> {
    const rows = await this.prefixedHealthWindows(
      codes.map((code) => ({ code, prefix: '' })),
      limit,
      dayFrom,
    );
    return new Map(rows.map((row) => [row.code, row]));
  }

  /**
   * As healthWindows, for (code, runKey prefix) pairs: a dynamic schedule's window is its handler's
   * code with its prefix (`schedule=<encoded id> `), a declared job's the code with ''. One row per
   * pair, in the order asked, its keys without the prefix; at most 10,000 pairs, each checked (else
   * InvalidJobQueryOptionsError, before any SQL).
   */
  async prefixedHealthWindows(pairs: readonly { code: string; prefix: string }[], limit: number, dayFrom: Date): Promise<HealthWindowRow[]> {
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1_000) throw new InvalidJobQueryOptionsError('healthWindows needs a limit from 1 to 1,000');
    if (!(dayFrom instanceof Date) || Number.isNaN(dayFrom.getTime())) throw new InvalidJobQueryOptionsError('healthWindows needs a valid dayFrom');
    const listed: unknown = pairs;
    if (!Array.isArray(listed) || listed.length > MAX_HEALTH_PAIRS) {
      throw new InvalidJobQueryOptionsError(`healthWindows needs a list of at most ${MAX_HEALTH_PAIRS.toLocaleString('en-US')} jobs`);
    }
    const codes: string[] = [];
    const prefixes: string[] = [];
    for (const pair of listed as unknown[]) {
      const { code, prefix } = (typeof pair === 'object' && pair !== null ? pair : {}) as { code?: unknown; prefix?: unknown };
      checkCode(code, 'healthWindows');
      if (typeof prefix !== 'string' || prefix.length > MAX_RUN_KEY_LENGTH || UNSTORABLE_TEXT.test(prefix)) {
        throw new InvalidJobQueryOptionsError(
          `healthWindows needs runKey prefixes of at most ${MAX_RUN_KEY_LENGTH} storable characters, got ${JSON.stringify(String(prefix).slice(0, 80))}`,
        );
      }
      codes.push(code as string);
      prefixes.push(prefix);
    }
    if (codes.length === 0) return [];
    const statement = this.executor.statements.healthWindows(codes, prefixes, limit, dayFrom.toISOString());
    const rows = await this.executor.rows<HealthWindowRow>(statement);
    const ordered: HealthWindowRow[] = new Array<HealthWindowRow>(codes.length);
    for (const row of rows) ordered[row.ordinal - 1] = row;
    return ordered;
  }

  /**
   * The health state of each of `codes` over its 10 newest finished occurrences: one row per code
   * (zeros for a code without any), in one statement that reads about 10 index entries per code.
   */
  async healthStates(codes: readonly string[]): Promise<Map<string, HealthStateRow>> {
    const listed: unknown = codes;
    if (!Array.isArray(listed) || listed.length > MAX_HEALTH_STATES) {
      throw new InvalidJobQueryOptionsError(`healthStates needs a list of at most ${MAX_HEALTH_STATES.toLocaleString('en-US')} jobs`);
    }
    for (const code of listed as unknown[]) checkCode(code, 'healthStates');
    if (codes.length === 0) return new Map();
    const rows = await this.executor.rows<HealthStateRow>(this.executor.statements.healthStates(codes));
    return new Map(rows.map((row) => [row.code, row]));
  }

  /** The runKey of a job's oldest recorded occurrence (of a dynamic schedule's: after `runKeyPrefix`), or null when it has none. */
  async firstOccurrenceKey(code: string, runKeyPrefix = ''): Promise<string | null> {
    const [row] = await this.executor.rows<{ runKey: string }>(this.executor.statements.firstOccurrence(code, runKeyPrefix));
    return row?.runKey ?? null;
  }

  /** The latest occurrence of each job that has one, with its status (one statement for all). */
  async latestOccurrences(codes: readonly string[]): Promise<Map<string, LatestOccurrenceRow>> {
    const rows = await this.executor.rows<LatestOccurrenceRow>(this.executor.statements.latestOccurrences(codes));
    return new Map(rows.map((row) => [row.code, row]));
  }

  /**
   * Frees a stuck lease: the run becomes FAIL with `data`, and its holder (should it be alive)
   * loses the lease. Applies only while the run is RUNNING with the fencing token the operator
   * saw: false when it finished or was reclaimed meanwhile.
   */
  async releaseStuckLease(id: string, fencingToken: number, data: Record<string, unknown>): Promise<boolean> {
    if (!Number.isSafeInteger(fencingToken) || fencingToken < 1) {
      throw new InvalidJobQueryOptionsError(`a fencing token must be a whole number from 1, got ${String(fencingToken)}`);
    }
    const statement = this.executor.statements.releaseStuckLease(checkRunId(id), String(fencingToken), JSON.stringify(data));
    return (await this.executor.rows(statement)).length === 1;
  }

  /**
   * RUNNING runs whose holder has not written for longer than its lease (the module default for
   * rows written by 1.1), oldest first: dead holders, or stuck ones. The next acquire of the
   * same identity reclaims them.
   */
  async findExpiredLeases(limit = 100): Promise<ExpiredJobLease[]> {
    const rows = await this.executor.rows<RunRow>(this.executor.statements.expiredLeases(this.defaultLeaseMs, limit));
    return rows.map((row) => {
      const view = toRunView(row);
      return { ...view, overdueMs: view.heartbeatAgeMs - (view.leaseMs ?? this.defaultLeaseMs) };
    });
  }

  /**
   * The planner's estimate of the table's rows (pg_class.reltuples, kept by autovacuum and
   * ANALYZE: no scan of the table), or null before the table was ever analyzed.
   */
  async estimateRowCount(): Promise<number | null> {
    const [row] = await this.executor.rows<{ rows: string | null }>(this.executor.statements.estimatedRows());
    const rows = row?.rows === null || row?.rows === undefined ? -1 : Number(row.rows);
    return rows < 0 ? null : rows;
  }

  /** How many RUNNING runs are past their lease. */
  async countExpiredLeases(): Promise<number> {
    const [row] = await this.executor.rows<{ count: number }>(this.executor.statements.countExpiredLeases(this.defaultLeaseMs));
    return row?.count ?? 0;
  }
}
