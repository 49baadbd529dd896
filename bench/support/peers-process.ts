import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { CleanupStack } from './cleanup';
import type { PeersWorkerArguments, PeersWorkerCommand, PeersWorkerLine } from './peers-worker';

type Kind = PeersWorkerLine['kind'];
type LineOf<K extends Kind> = Extract<PeersWorkerLine, { kind: K }>;

/**
 * A peers worker (bench/support/peer-workers/<peer>.ts) in a process of its own, driven over stdin:
 * `next(kind)` resolves with its next line of that kind, and rejects if it exits first. Killed if
 * the bench ends before it does.
 */
export class PeersProcess {
  private readonly child: ChildProcess;
  private readonly lines: PeersWorkerLine[] = [];
  private readonly waiting: Array<{ kind: Kind; resolve(line: PeersWorkerLine): void; reject(error: Error): void }> = [];
  private exit: Error | undefined;

  constructor(
    readonly label: string,
    entry: string,
    args: PeersWorkerArguments,
    cleanup: CleanupStack,
  ) {
    this.child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', entry, JSON.stringify(args)], { stdio: ['pipe', 'pipe', 'inherit'] });
    cleanup.add(this.child, async (started) => {
      if (started.exitCode === null) started.kill('SIGKILL');
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (!line.startsWith('{"kind"')) {
        process.stderr.write(`[${label}] ${line}\n`);
        return;
      }
      let parsed: PeersWorkerLine;
      try {
        parsed = JSON.parse(line) as PeersWorkerLine;
      } catch (error) {
        this.fail(new Error(`peers worker ${label} printed a line that is not JSON: ${(error as Error).message}`));
        return;
      }
      const index = this.waiting.findIndex((waiter) => waiter.kind === parsed.kind);
      if (index >= 0) this.waiting.splice(index, 1)[0].resolve(parsed);
      else this.lines.push(parsed);
    });
    this.child.once('close', (code) => this.fail(new Error(`peers worker ${label} exited with ${code}`)));
  }

  /** Rejects every wait, now and later, with the first failure. */
  private fail(error: Error): void {
    this.exit ??= error;
    for (const waiter of this.waiting.splice(0)) waiter.reject(this.exit);
  }

  send(command: PeersWorkerCommand): void {
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  next<K extends Kind>(kind: K): Promise<LineOf<K>> {
    const index = this.lines.findIndex((line) => line.kind === kind);
    if (index >= 0) return Promise.resolve(this.lines.splice(index, 1)[0] as LineOf<K>);
    if (this.exit) return Promise.reject(this.exit);
    return new Promise((resolve, reject) => this.waiting.push({ kind, resolve: (line) => resolve(line as LineOf<K>), reject }));
  }
}
