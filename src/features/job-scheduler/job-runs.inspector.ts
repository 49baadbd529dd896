import { Inject, Injectable, Optional } from '@nestjs/common';
import { encodeCursor, resolveRunFilter, toRunView } from './job-run-arguments';
import type { ExpiredJobLease, JobRunFilter, JobRunPage, JobRunView } from './job-run.types';
import { JOB_SCHEDULER_DATA_SOURCE } from './job-scheduler.constants';
import { JobSchedulerExecutor } from './job-scheduler.executor';
import { JOB_SCHEDULER_MODULE_OPTIONS, type JobSchedulerRuntimeOptions } from './job-scheduler.module-definition';
import type { RunRow } from './job-scheduler.sql';
import type { JobAcquireOptions } from './job-scheduler.types';
import { resolveJobIdentity } from './job-identity';
import type { JobSchedulerDatabase } from './lease-database';
import { resolveTimingDefaults } from './lease-timing';

/**
 * Read-only views of the lease table for operators: runs by code / status / time with keyset
 * pagination, one logical run by its identity, and the RUNNING leases past their lease.
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
