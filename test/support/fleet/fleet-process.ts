import { type ChildProcess, fork, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

/** How a TypeScript entry runs in a child process (as `npm run chaos` and the tests run theirs). */
export const TS_NODE_ARGUMENTS: readonly string[] = ['-r', 'ts-node/register/transpile-only'];

/** Real epoch ms read from the monotonic clock: a faked or skewed `Date` does not move it. */
export const realNow = (): number => Math.round(performance.timeOrigin + performance.now());

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A message of a fleet protocol, either way: tagged by `type`. A child says `{ type: 'ready' }` once booted. */
export interface FleetMessage {
  type: string;
}

export interface StartOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** stdout and stderr are appended to this file, which outlives the process (for the report). */
  outputFile: string;
  /** Run as this OS user (PostgreSQL and Patroni refuse root). */
  runAs?: { uid: number; gid: number };
}

const withOutputFile = (outputFile: string, start: (output: number) => ChildProcess): ChildProcess => {
  const output = openSync(outputFile, 'a');
  try {
    return start(output);
  } finally {
    closeSync(output);
  }
};

/** Forks a Node entry with an IPC channel: TypeScript through ts-node, JavaScript with source maps. */
export const forkNode = (entry: string, options: StartOptions): ChildProcess =>
  withOutputFile(options.outputFile, (output) =>
    fork(entry, [], {
      cwd: options.cwd,
      execArgv: entry.endsWith('.ts') ? [...TS_NODE_ARGUMENTS] : ['--enable-source-maps'],
      env: options.env,
      stdio: ['ignore', output, output, 'ipc'],
    }),
  );

/** Starts a command without IPC (a server of the cluster under test). */
export const spawnCommand = (command: string, args: string[], options: StartOptions): ChildProcess =>
  withOutputFile(options.outputFile, (output) =>
    spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', output, output],
      ...(options.runAs ? { uid: options.runAs.uid, gid: options.runAs.gid } : {}),
    }),
  );

/**
 * One process of a fleet, as its orchestrator sees it: when it said it was ready, whether and
 * how it exited, its output, and typed messages to it. A suite's own process class extends this
 * with what its checks need (fault marks, runs in flight).
 */
export class FleetProcess<ToChild extends FleetMessage = never, FromChild extends FleetMessage = never> {
  /** When it said `{ type: 'ready' }` (realNow); undefined while it boots. */
  readyMs: number | undefined;
  exit: ExitStatus | undefined;
  /** When it exited (realNow). */
  exitMs: number | undefined;
  readonly startedMs = realNow();
  readonly exited: Promise<void>;

  constructor(
    /** How errors name it: `worker w0.1`, `etcd`. */
    readonly name: string,
    readonly child: ChildProcess,
    readonly outputFile: string,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        this.exitMs = realNow();
        this.afterExit();
        resolve();
      }),
    );
    child.on('error', () => undefined);
    this.onMessage((message) => {
      if (message.type === 'ready') this.readyMs ??= realNow();
    });
  }

  /** Called once it has exited, before `exited` resolves. */
  protected afterExit(): void {}

  get alive(): boolean {
    return this.exit === undefined;
  }

  /** Up and said it was ready. */
  get ready(): boolean {
    return this.alive && this.readyMs !== undefined;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  onMessage(handler: (message: FromChild) => void): void {
    this.child.on('message', handler);
  }

  /** Sends when it can still hear (alive, channel open); a message to a dying process is dropped. */
  send(message: ToChild): void {
    if (this.alive && this.child.connected) this.child.send(message, undefined, {}, () => undefined);
  }

  /** Signals it unless it is gone. */
  signal(signal: NodeJS.Signals): void {
    if (!this.alive) return;
    try {
      this.child.kill(signal);
    } catch {
      // gone meanwhile
    }
  }

  /** SIGKILL, woken first if it was stopped (SIGSTOP) so that nothing lingers. */
  kill(): void {
    this.signal('SIGCONT');
    this.signal('SIGKILL');
  }

  /** The end of its output file. */
  outputTail(characters = 2_000): string {
    try {
      return readFileSync(this.outputFile, 'utf8').slice(-characters);
    } catch {
      return '';
    }
  }
}

/** What readiness waits and teardown need of a process, whatever its protocol. */
export type FleetMember = Pick<FleetProcess<FleetMessage, FleetMessage>, 'name' | 'alive' | 'ready' | 'exited' | 'kill' | 'outputTail'>;
