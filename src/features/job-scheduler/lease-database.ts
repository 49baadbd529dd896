import type { Pool } from 'pg';
import type { DataSource, Repository } from 'typeorm';
import { JOB_SCHEDULER_TABLE, JobScheduler } from './job-scheduler.entity';
import { guardPoolConnections, guardPools } from './pool-error-guard';

/** A node-postgres pool of your own, for use without TypeORM (the table in `schema`, or on the search_path). */
export interface JobSchedulerPoolSource {
  pool: Pool;
  schema?: string;
}

/** Where the lease's statements go: a TypeORM DataSource, a 1.x-style repository, or a pg pool. */
export type JobSchedulerDatabase = DataSource | Repository<JobScheduler> | JobSchedulerPoolSource;

/** The little the executor needs of a database: its pool, its table, and a statement logger. */
export interface LeaseDatabase {
  /** The pool statements run on; undefined while not initialized (or destroyed). */
  pool(): Pool | undefined;
  tableName: string;
  schema?: string;
  logQuery(text: string, values: unknown[]): void;
  logQueryError(error: Error, text: string, values: unknown[]): void;
}

const isPoolSource = (value: unknown): value is JobSchedulerPoolSource =>
  typeof value === 'object' && value !== null && 'pool' in value && typeof (value as { pool?: { connect?: unknown } }).pool?.connect === 'function';

/** A TypeORM repository (1.x constructed the service with `@InjectRepository(JobScheduler)`): its DataSource. */
const dataSourceOfRepository = (value: unknown): DataSource | undefined => {
  const manager = (value as { manager?: { dataSource?: DataSource; connection?: DataSource } } | null)?.manager;
  return manager?.dataSource ?? manager?.connection;
};

const fromDataSource = (dataSource: DataSource): LeaseDatabase => {
  const metadata = dataSource.hasMetadata(JobScheduler) ? dataSource.getMetadata(JobScheduler) : undefined;
  let guarded = guardPoolConnections(dataSource);
  return {
    tableName: metadata?.tableName ?? JOB_SCHEDULER_TABLE,
    schema: metadata?.schema,
    pool: () => {
      const pool = (dataSource.driver as unknown as { master?: Pool }).master;
      // Also for the application's TypeORM queries on this DataSource (see pool-error-guard.ts).
      if (pool && !guarded) guarded = guardPoolConnections(dataSource);
      return pool;
    },
    logQuery: (text, values) => {
      dataSource.logger.logQuery(text, values);
    },
    logQueryError: (error, text, values) => {
      dataSource.logger.logQueryError(error, text, values);
    },
  };
};

const fromPool = ({ pool, schema }: JobSchedulerPoolSource): LeaseDatabase => {
  guardPools([pool]);
  return { tableName: JOB_SCHEDULER_TABLE, schema, pool: () => pool, logQuery: () => undefined, logQueryError: () => undefined };
};

/** Adapts whatever the service was given. Throws TypeError for anything else. */
export const leaseDatabaseOf = (source: JobSchedulerDatabase): LeaseDatabase => {
  if (isPoolSource(source)) return fromPool(source);
  if (typeof (source as DataSource | null)?.hasMetadata === 'function') return fromDataSource(source as DataSource);
  const fromRepository = dataSourceOfRepository(source);
  if (fromRepository) return fromDataSource(fromRepository);
  throw new TypeError('JobSchedulerService needs a TypeORM DataSource, a Repository<JobScheduler> or { pool } (a node-postgres Pool)');
};
