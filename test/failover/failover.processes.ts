import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join, sep } from 'node:path';

/**
 * The processes of the cluster under test (etcd, Patroni, PostgreSQL, HAProxy): started with a
 * clean environment, as the `postgres` OS user when this process is root, each with its working
 * directory inside the run directory. PostgreSQL detaches itself (Patroni starts the postmaster
 * in a session of its own, and every backend in another), so a process group is no handle on
 * it: what is ours is found by working directory (a postmaster and its children work in the data
 * directory), and that is how teardown makes sure nothing survives.
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

export class ClusterProcess {
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly logFile: string,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve();
      }),
    );
    child.on('error', () => undefined);
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.alive) return;
    try {
      this.child.kill(signal);
    } catch {
      // gone meanwhile
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    if (!this.alive) return;
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  logTail(characters = 3_000): string {
    try {
      return readFileSync(this.logFile, 'utf8').slice(-characters);
    } catch {
      return '';
    }
  }
}

export interface SpawnOptions {
  cwd: string;
  logFile: string;
  env: NodeJS.ProcessEnv;
  runAs?: RunAs;
}

/** Starts a cluster process, its output appended to `logFile`. */
export const spawnClusterProcess = (name: string, command: string, args: string[], options: SpawnOptions): ClusterProcess => {
  const output = openSync(options.logFile, 'a');
  try {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', output, output],
      ...(options.runAs ? { uid: options.runAs.uid, gid: options.runAs.gid } : {}),
    });
    return new ClusterProcess(name, child, options.logFile);
  } finally {
    closeSync(output);
  }
};

const isInside = (path: string, directory: string): boolean => path === directory || path.startsWith(directory.endsWith(sep) ? directory : directory + sep);

/** Pids (not this process) whose working directory is `directory` or below it. Synchronous. */
export const processesUnder = (directory: string): number[] => {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return pids;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      if (isInside(readlinkSync(join('/proc', entry, 'cwd')), directory)) pids.push(pid);
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return pids;
};

/** The command line of a process, or '' when it is gone. */
export const commandLineOf = (pid: number): string => {
  try {
    return readFileSync(join('/proc', String(pid), 'cmdline'), 'utf8').split('\u0000').join(' ').trim();
  } catch {
    return '';
  }
};

/** Sends `signal` to every pid; gone ones are skipped. Synchronous, for exit handlers too. */
export const signalAll = (pids: Iterable<number>, signal: NodeJS.Signals): void => {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone
    }
  }
};

/**
 * SIGKILLs whatever still works under `directory` (stopped processes are woken first so that
 * nothing lingers), until nothing is left or `attempts` sweeps have passed. Synchronous.
 */
export const killEverythingUnder = (directory: string, attempts = 20): number[] => {
  const killed = new Set<number>();
  for (let sweep = 0; sweep < attempts; sweep++) {
    const pids = processesUnder(directory);
    if (pids.length === 0) break;
    for (const pid of pids) killed.add(pid);
    signalAll(pids, 'SIGKILL');
    signalAll(pids, 'SIGCONT');
    // A short pause for the kernel to reap them (synchronous: usable in an exit handler).
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
  return [...killed];
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
