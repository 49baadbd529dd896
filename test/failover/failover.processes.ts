import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FleetProcess, spawnCommand } from '../support/fleet';

/**
 * The processes of the cluster under test (etcd, Patroni, PostgreSQL, HAProxy): started with a
 * clean environment, as the `postgres` OS user when this process is root, each with its working
 * directory inside the run directory. PostgreSQL detaches itself (Patroni starts the postmaster
 * in a session of its own, and every backend in another), so a process group is no handle on
 * it: what is ours is found by working directory (a postmaster and its children work in the data
 * directory), and that is how teardown makes sure nothing survives (killEverythingUnder, in
 * test/support/fleet).
 */

export interface RunAs {
  user: string;
  uid: number;
  gid: number;
}

/** The postgres OS user when running as root (PostgreSQL refuses root), else the current user. */
export const resolveRunAs = (): RunAs | undefined => {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { user: 'postgres', uid, gid };
  } catch {
    throw new Error('running as root needs a `postgres` OS user to run PostgreSQL and Patroni as (apt-get install postgresql-15 creates it)');
  }
};

/**
 * The environment of a cluster process: no PG* variable (an inherited PGPASSWORD once made
 * Patroni's replication connections fail silently), a plain locale, a HOME it may write.
 */
export const clusterEnvironment = (home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const environment: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith('PG') || name === 'DATABASE_URL') continue;
    environment[name] = value;
  }
  return { ...environment, HOME: home, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', ...extra };
};

/** A server of the cluster (etcd, Patroni, HAProxy): no IPC, its output in `logFile`. */
export class ClusterProcess extends FleetProcess {
  get logFile(): string {
    return this.outputFile;
  }

  /** SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    if (!this.alive) return;
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

export interface SpawnOptions {
  cwd: string;
  logFile: string;
  env: NodeJS.ProcessEnv;
  runAs?: RunAs;
}

/** Starts a cluster process, its output appended to `logFile`. */
export const spawnClusterProcess = (name: string, command: string, args: string[], options: SpawnOptions): ClusterProcess =>
  new ClusterProcess(
    name,
    spawnCommand(command, args, { cwd: options.cwd, env: options.env, outputFile: options.logFile, runAs: options.runAs }),
    options.logFile,
  );

/** The command line of a process, or '' when it is gone. */
export const commandLineOf = (pid: number): string => {
  try {
    return readFileSync(join('/proc', String(pid), 'cmdline'), 'utf8')
      .split('\u0000')
      .join(' ')
      .trim();
  } catch {
    return '';
  }
};

/** The postmaster pid recorded in a data directory, if there is one. */
export const postmasterPidOf = (dataDir: string): number | undefined => {
  try {
    const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
};
