import { Client } from 'pg';
import { type PostgresServer, startEmbeddedPostgres } from '../../test/support/postgres-server';

/** What the results say about the server the figures come from. */
export interface ServerDescription {
  kind: PostgresServer['kind'];
  version: string;
  settings: Record<string, string>;
}

const REPORTED_SETTINGS = ['fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method', 'shared_buffers', 'max_connections', 'jit'] as const;

/**
 * `DATABASE_URL` when set, else an embedded PostgreSQL started here with durability on
 * (fsync and synchronous_commit as a production server has them). Sets DATABASE_URL for the
 * per-scenario databases (test/support/test-database.ts reads it).
 */
export const startBenchServer = async (): Promise<PostgresServer> => {
  const external = process.env.DATABASE_URL;
  const server: PostgresServer = external ? { url: external, kind: 'external', stop: async () => undefined } : await startEmbeddedPostgres({ fast: false });
  process.env.DATABASE_URL = server.url;
  return server;
};

export const describeServer = async (server: PostgresServer): Promise<ServerDescription> => {
  const client = new Client({ connectionString: server.url });
  await client.connect();
  try {
    const version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version;
    const rows = (
      await client.query<{ name: string; setting: string }>('SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name', [
        REPORTED_SETTINGS,
      ])
    ).rows;
    const settings = Object.fromEntries(rows.map((row) => [row.name, row.setting]));
    return { kind: server.kind, version: `PostgreSQL ${version}`, settings };
  } finally {
    await client.end();
  }
};
