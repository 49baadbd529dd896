import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions.js';
import { JobScheduler, JobSchedulerMigrations } from '../../src/features';

/** The server URL given by the global setup. */
export const serverUrl = (): string => {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the tests through jest (globalSetup provides it)');
  return url;
};

export const withDatabase = (url: string, database: string): string => {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
};

/** Overrides for a test DataSource (PostgreSQL options, loosely typed). */
export type TestDataSourceOptions = Partial<PostgresDataSourceOptions> & Record<string, unknown>;

export interface TestDatabase {
  name: string;
  url: string;
  /** A DataSource of its own (its own pool): one "node". Destroy it when done. */
  dataSource(options?: TestDataSourceOptions): Promise<DataSource>;
  /** Runs SQL on a short-lived connection of its own. */
  sql<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<Row[]>;
  drop(): Promise<void>;
}

/** Runs SQL on the server's admin database, on a short-lived connection. */
export const adminQuery = async (text: string): Promise<void> => {
  const client = new Client({ connectionString: serverUrl() });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
};

/**
 * One database per test file (as pg-boss's hooks do): created empty, migrated unless told not
 * to, and dropped at the end.
 */
export const createTestDatabase = async (options: { migrate?: boolean } = {}): Promise<TestDatabase> => {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE "${name}"`);
  const url = withDatabase(serverUrl(), name);
  const open: DataSource[] = [];

  const dataSource = async (extra: TestDataSourceOptions = {}): Promise<DataSource> => {
    const source = new DataSource({
      type: 'postgres',
      url,
      entities: [JobScheduler],
      poolSize: 4,
      ...extra,
    });
    await source.initialize();
    open.push(source);
    return source;
  };

  const sql = async <Row>(text: string, values: unknown[] = []): Promise<Row[]> => {
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(text, values)).rows as Row[];
    } finally {
      await client.end();
    }
  };

  if (options.migrate !== false) {
    const migrator = await dataSource({ migrations: [...JobSchedulerMigrations], poolSize: 1 });
    await migrator.runMigrations();
    await migrator.destroy();
  }

  return {
    name,
    url,
    dataSource,
    sql,
    drop: async () => {
      await Promise.all(open.filter((source) => source.isInitialized).map((source) => source.destroy()));
      await adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
};

/**
 * For a test file that wants a database per test: `fresh(migrate)` creates one; all of them are
 * dropped after the file's tests (call at the top level of the file).
 */
export const freshDatabasePerTest = (): ((migrate: boolean) => Promise<TestDatabase>) => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    await Promise.all(databases.map((database) => database.drop()));
  });
  return async (migrate) => {
    const database = await createTestDatabase({ migrate });
    databases.push(database);
    return database;
  };
};
