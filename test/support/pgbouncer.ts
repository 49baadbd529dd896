import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { connect } from 'node:net';
import { freePort } from './postgres-server';

/**
 * A PgBouncer of its own in front of a PostgreSQL server, for tests: config and userlist in a
 * temporary directory, listening on a free loopback port, run as a child process and stopped
 * after. Debian's package (`apt-get install pgbouncer`) puts the binary in /usr/sbin.
 */
export interface PgBouncer {
  /** `url` rewritten to go through the bouncer (same user, password and database). */
  url(databaseUrl: string): string;
  /** URL of the admin console (`SHOW POOLS`, `SHOW SERVERS`...). */
  readonly adminUrl: string;
  readonly port: number;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  poolMode?: 'session' | 'transaction' | 'statement';
  /** Server connections per database/user pair. */
  poolSize?: number;
}

const SEARCH = ['/usr/sbin', '/usr/local/sbin', '/usr/bin', '/usr/local/bin'];

/** The pgbouncer executable, or undefined when it is not installed. */
export const findPgBouncer = (): string | undefined => {
  const directories = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...SEARCH];
  for (const directory of directories) {
    const candidate = join(directory, 'pgbouncer');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
};

/** PgBouncer refuses to run as root: as root, name an unprivileged user to switch to. */
const unprivilegedUser = (): string | undefined => {
  if (process.getuid?.() !== 0) return undefined;
  for (const user of ['postgres', 'nobody']) {
    try {
      execFileSync('id', ['-u', user], { stdio: 'ignore' });
      return user;
    } catch {
      // no such user
    }
  }
  throw new Error('pgbouncer cannot run as root and neither a postgres nor a nobody user exists to run it as');
};

const quoteIni = (value: string): string => value.replace(/[\s;=]/g, (character) => `\\${character}`);
const quoteUserlist = (value: string): string => `"${value.replace(/"/g, '""')}"`;

const waitForPort = async (port: number, child: ChildProcess, output: () => string): Promise<void> => {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`pgbouncer exited (${child.exitCode ?? child.signalCode}): ${output()}`);
    }
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`pgbouncer did not listen on ${port} within 10 s: ${output()}`);
};

/** Starts PgBouncer in front of the server of `serverUrl` (any database on it, same credentials). */
export const startPgBouncer = async (serverUrl: string, options: PgBouncerOptions = {}): Promise<PgBouncer> => {
  const binary = findPgBouncer();
  if (!binary) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const password = decodeURIComponent(server.password);
  const port = await freePort();
  const directory = await mkdtemp(join(tmpdir(), 'sdcorejs-pgbouncer-'));
  const ini = join(directory, 'pgbouncer.ini');
  const userlist = join(directory, 'userlist.txt');
  await writeFile(
    ini,
    [
      '[databases]',
      `* = host=${quoteIni(server.hostname || '127.0.0.1')} port=${server.port || 5432}`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      // A server URL without a password (a trust-auth server): clients need none either.
      `auth_type = ${password ? 'md5' : 'trust'}`,
      `auth_file = ${userlist}`,
      `admin_users = ${user}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 4}`,
      'max_client_conn = 500',
      'ignore_startup_parameters = extra_float_digits',
      'logfile =',
      'pidfile =',
      '',
    ].join('\n'),
  );
  // A plain-text password lets PgBouncer log in to the server with any method it asks for.
  await writeFile(userlist, `${quoteUserlist(user)} ${quoteUserlist(password)}\n`);
  // Readable by the user PgBouncer switches to when started as root.
  await chmod(directory, 0o755);
  await chmod(ini, 0o644);
  await chmod(userlist, 0o644);

  const runAs = unprivilegedUser();
  const child = spawn(binary, [...(runAs ? ['-u', runAs] : []), ini], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-4_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const stop = async (): Promise<void> => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(directory, { recursive: true, force: true });
  };

  try {
    await waitForPort(port, child, () => output);
  } catch (error) {
    await stop();
    throw error;
  }

  const through = (databaseUrl: string): string => {
    const parsed = new URL(databaseUrl);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(port);
    return parsed.toString();
  };
  const admin = new URL(serverUrl);
  admin.pathname = '/pgbouncer';
  return { url: through, adminUrl: through(admin.toString()), port, stop };
};
