import { createHash } from 'node:crypto';
import type { Pool, QueryConfig } from 'pg';
import { type DataSource, QueryFailedError } from 'typeorm';
import { JOB_SCHEDULER_TABLE, JobScheduler } from './job-scheduler.entity';
import { createJobSchedulerStatements, type JobSchedulerStatements, qualifiedTableName, type SqlStatement } from './job-scheduler.sql';
import { guardPoolConnections } from './pool-error-guard';

export interface ExecutorOptions {
  /**
   * Send named prepared statements (default true): each connection parses and plans a statement
   * once, then only binds it (1.5x to 1.8x the cycles/s of unnamed statements here). Behind
   * PgBouncer in transaction pooling (before 1.21, or without max_prepared_statements) a name
   * prepared on one server connection is unknown on the next: set false there. If the server
   * says so anyway (SQLSTATE 26000 or 42P05, before anything ran), the executor retries that
   * statement unnamed, warns once, and sends unnamed statements from then on.
   */
  preparedStatements?: boolean;
  onPreparedStatementsOff?: (reason: string) => void;
}

/** "prepared statement does not exist" / "already exists": raised before the statement runs. */
const PREPARED_STATEMENT_MISMATCH = new Set(['26000', '42P05']);

/**
 * Runs the lease's statements on the DataSource's own `pg` pool (no TypeORM QueryRunner per
 * statement: one checkout, one round trip), on the table found from the entity metadata (its
 * schema included) or `job-scheduler` on the search_path. The DataSource's logger still sees
 * every statement, and driver errors still arrive as TypeORM's QueryFailedError.
 */
export class JobSchedulerExecutor {
  readonly statements: JobSchedulerStatements;
  private readonly names = new Map<string, string>();
  /** Whether the DataSource's pools give every connection an error listener (pool-error-guard.ts). */
  private poolsGuarded = false;
  private prepared: boolean;

  constructor(
    private readonly dataSource: DataSource,
    private readonly options: ExecutorOptions = {},
  ) {
    this.prepared = options.preparedStatements ?? true;
    const metadata = dataSource.hasMetadata(JobScheduler) ? dataSource.getMetadata(JobScheduler) : undefined;
    this.statements = createJobSchedulerStatements(qualifiedTableName(metadata?.tableName ?? JOB_SCHEDULER_TABLE, metadata?.schema));
    this.poolsGuarded = guardPoolConnections(dataSource);
  }

  async rows<Row = Record<string, unknown>>({ text, values }: SqlStatement): Promise<Row[]> {
    const { logger } = this.dataSource;
    logger.logQuery(text, values);
    try {
      if (!this.prepared) return (await this.pool().query({ text, values })).rows as Row[];
      try {
        return (await this.pool().query({ name: this.nameOf(text), text, values } satisfies QueryConfig)).rows as Row[];
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (typeof code !== 'string' || !PREPARED_STATEMENT_MISMATCH.has(code)) throw error;
        this.prepared = false;
        this.options.onPreparedStatementsOff?.(`the server reported SQLSTATE ${code} for a named prepared statement`);
        return (await this.pool().query({ text, values })).rows as Row[];
      }
    } catch (error) {
      logger.logQueryError(error instanceof Error ? error : String(error), text, values);
      throw new QueryFailedError(text, values, error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** The DataSource's pg pool (the primary's, when replication is configured). */
  private pool(): Pool {
    const pool = (this.dataSource.driver as unknown as { master?: Pool }).master;
    if (!pool) throw new QueryFailedError('', [], new Error('The DataSource is not initialized (or was destroyed)'));
    // Also for the application's TypeORM queries on this DataSource (see pool-error-guard.ts).
    if (!this.poolsGuarded) this.poolsGuarded = guardPoolConnections(this.dataSource);
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
