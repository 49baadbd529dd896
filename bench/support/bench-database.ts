import { Client } from 'pg';
import { JobSchedulerMigrations } from '../../src/features';
import { createTestDatabase, type TestDatabase } from '../../test/support/test-database';
import type { CleanupStack } from './cleanup';
import type { FigureSheet } from './report';

/**
 * A fresh database on the bench server with the schema applied by the library's migrations
 * (JobSchedulerMigrations, or the first of them given, each in its own transaction unless it runs
 * without one, as an application would run them), dropped when the scenario ends.
 */
export const createBenchDatabase = async (
  cleanup: CleanupStack,
  migrations: ReadonlyArray<(typeof JobSchedulerMigrations)[number]> = JobSchedulerMigrations,
): Promise<TestDatabase> => {
  const database = cleanup.add(await createTestDatabase({ migrate: false }), (created) => created.drop());
  const migrator = await database.dataSource({
    migrations: [...migrations],
    migrationsTransactionMode: 'each',
    poolSize: 1,
  });
  try {
    await migrator.runMigrations();
  } finally {
    await migrator.destroy();
  }
  return database;
};

/** A CHECKPOINT, so that what follows pays its full-page images as after any checkpoint. */
export const checkpoint = async (database: TestDatabase): Promise<void> => {
  try {
    await database.sql('CHECKPOINT');
  } catch (error) {
    // Needs superuser or pg_checkpoint on a server given by DATABASE_URL; the checkpointer will come.
    if ((error as { code?: unknown }).code !== '42501') throw error;
  }
};

/**
 * Holds timed checkpoints off until the scenario ends (checkpoint_timeout 1 h, set back at
 * cleanup): a scenario that compares WAL between windows then decides where checkpoints fall
 * (see `checkpoint`), not the server's 5-minute timer. False where the server refuses ALTER SYSTEM
 * (a DATABASE_URL without superuser): timed checkpoints then come as configured.
 */
export const holdTimedCheckpoints = async (database: TestDatabase, cleanup: CleanupStack): Promise<boolean> => {
  try {
    await database.sql(`ALTER SYSTEM SET checkpoint_timeout = '1h'`);
  } catch (error) {
    if ((error as { code?: unknown }).code !== '42501') throw error;
    return false;
  }
  await database.sql('SELECT pg_reload_conf()');
  cleanup.add(database, async () => {
    await database.sql('ALTER SYSTEM RESET checkpoint_timeout');
    await database.sql('SELECT pg_reload_conf()');
  });
  return true;
};

/** Reads the server's WAL insert position (cluster-wide), as a byte count. */
export type WalProbe = () => Promise<bigint>;

/** A WAL probe on a connection of its own, closed when the scenario ends. */
export const openWalProbe = async (database: TestDatabase, cleanup: CleanupStack): Promise<WalProbe> => {
  const client = new Client({ connectionString: database.url });
  await client.connect();
  cleanup.add(client, (connected) => connected.end());
  return async () => {
    const { rows } = await client.query<{ bytes: string }>("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint::text AS bytes");
    return BigInt(rows[0].bytes);
  };
};

/** Connections the server can still accept (max_connections less reserved and open ones). */
export const freeConnections = async (database: TestDatabase): Promise<number> => {
  const [row] = await database.sql<{ free: number }>(
    `SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
       - (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend') AS free`,
  );
  return row.free;
};

/**
 * Whether the server can take `needed` more connections; when it cannot, says so in the sheet
 * (the case is skipped, the rest of the scenario runs). The embedded server allows 400.
 */
export const hasConnectionsFor = async (database: TestDatabase, needed: number, caseName: string, sheet: FigureSheet): Promise<boolean> => {
  const free = await freeConnections(database);
  if (free >= needed) return true;
  sheet.note(`Skipped ${caseName}: it needs ${needed} connections (one per node) and the server has ${free} free; raise max_connections.`);
  sheet.goal(`${caseName} measured`, `${needed} connections`, `skipped: ${free} free`, null);
  return false;
};
