import { createHash } from 'node:crypto';
import type { Pool, QueryConfig } from 'pg';
import { type DataSource, QueryFailedError } from 'typeorm';
import { JOB_SCHEDULER_TABLE, JobScheduler } from './job-scheduler.entity';
import { createJobSchedulerStatements, type JobSchedulerStatements, qualifiedTableName, type SqlStatement } from './job-scheduler.sql';

export interface ExecutorOptions {
  /**
   * Send named prepared statements: each connection parses and plans a statement once, then only
   * binds it (about 1.5x the cycles/s of unnamed statements here). Off by default: behind
   * PgBouncer in transaction pooling (before 1.21, or without max_prepared_statements) a name
   * prepared on one server connection is unknown on the next.
   */
  preparedStatements?: boolean;
}

/**
 * Runs the lease's statements on the DataSource's own `pg` pool (no TypeORM QueryRunner per
 * statement: one checkout, one round trip), on the table found from the entity metadata (its
 * schema included) or `job-scheduler` on the search_path. The DataSource's logger still sees
 * every statement, and driver errors still arrive as TypeORM's QueryFailedError.
 */
export class JobSchedulerExecutor {
  readonly statements: JobSchedulerStatements;
  private readonly names = new Map<string, string>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly options: ExecutorOptions = {},
  ) {
    const metadata = dataSource.hasMetadata(JobScheduler) ? dataSource.getMetadata(JobScheduler) : undefined;
    this.statements = createJobSchedulerStatements(qualifiedTableName(metadata?.tableName ?? JOB_SCHEDULER_TABLE, metadata?.schema));
  }

  async rows<Row = Record<string, unknown>>({ text, values }: SqlStatement): Promise<Row[]> {
    const { logger } = this.dataSource;
    const query: QueryConfig = this.options.preparedStatements ? { name: this.nameOf(text), text, values } : { text, values };
    logger.logQuery(text, values);
    try {
      return (await this.pool().query(query)).rows as Row[];
    } catch (error) {
      logger.logQueryError(error instanceof Error ? error : String(error), text, values);
      throw new QueryFailedError(text, values, error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** The DataSource's pg pool (the primary's, when replication is configured). */
  private pool(): Pool {
    const pool = (this.dataSource.driver as unknown as { master?: Pool }).master;
    if (!pool) throw new QueryFailedError('', [], new Error('The DataSource is not initialized (or was destroyed)'));
    return pool;
  }

  private nameOf(text: string): string {
    let name = this.names.get(text);
    if (name === undefined) {
      name = `sdcorejs_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      this.names.set(text, name);
    }
    return name;
  }
}
