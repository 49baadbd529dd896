import type { DataSource } from 'typeorm';
import { JOB_SCHEDULER_TABLE, JobScheduler } from './job-scheduler.entity';
import { createJobSchedulerStatements, type JobSchedulerStatements, qualifiedTableName, type SqlStatement } from './job-scheduler.sql';
import { guardPoolConnections } from './pool-error-guard';

/**
 * Runs the lease's statements on a DataSource: the table found from the entity metadata (its
 * schema included) or `job-scheduler` on the search_path; one pooled connection per statement.
 */
export class JobSchedulerExecutor {
  readonly statements: JobSchedulerStatements;
  /** Whether the DataSource's pools give each new connection an error listener (pool-error-guard.ts). */
  private poolsGuarded = false;

  constructor(private readonly dataSource: DataSource) {
    const metadata = dataSource.hasMetadata(JobScheduler) ? dataSource.getMetadata(JobScheduler) : undefined;
    this.statements = createJobSchedulerStatements(qualifiedTableName(metadata?.tableName ?? JOB_SCHEDULER_TABLE, metadata?.schema));
  }

  async rows<Row = Record<string, unknown>>(statement: SqlStatement): Promise<Row[]> {
    if (!this.poolsGuarded) this.poolsGuarded = guardPoolConnections(this.dataSource);
    const runner = this.dataSource.createQueryRunner();
    try {
      const result = await runner.query(statement.text, statement.values, true);
      return result.records as Row[];
    } finally {
      await runner.release();
    }
  }
}
