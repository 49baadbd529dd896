import { type PostgresServer, startPostgres } from './postgres-server';

declare global {
  // Shared between jest's globalSetup and globalTeardown (same process).
  var __SDCOREJS_POSTGRES__: PostgresServer | undefined;
}

/** Provides DATABASE_URL to every test file: the given one, a container, or an embedded server. */
export default async function globalSetup(): Promise<void> {
  const server = await startPostgres();
  globalThis.__SDCOREJS_POSTGRES__ = server;
  process.env.DATABASE_URL = server.url;
  process.env.SDCOREJS_POSTGRES_KIND = server.kind;
  if (!process.env.CI || server.kind !== 'external') {
    process.stdout.write(`\nPostgreSQL for tests: ${server.kind}\n`);
  }
}
