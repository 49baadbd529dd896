import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { CleanupStack } from './cleanup';

/**
 * Runs a bench worker script in a process of its own (ts-node, transpile only) with its
 * arguments as JSON in argv[2]. Its stdout lines that are JSON objects with a `kind` are
 * collected; other lines go to stderr prefixed with `label`. Resolves with the lines once it
 * exits with 0; rejects otherwise. The process is killed if the bench ends first.
 */
export const runWorkerProcess = <Line extends { kind: string }>(
  script: string,
  args: unknown,
  label: string,
  cleanup: CleanupStack,
  /** Node's own flags for the process (e.g. --expose-gc). */
  nodeFlags: readonly string[] = [],
): Promise<Line[]> => {
  const child: ChildProcess = spawn(process.execPath, [...nodeFlags, '-r', 'ts-node/register/transpile-only', script, JSON.stringify(args)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanup.add(child, async (started) => {
    if (started.exitCode === null) started.kill('SIGKILL');
  });
  const lines: Line[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.startsWith('{"kind"')) lines.push(JSON.parse(line) as Line);
    else process.stderr.write(`[${label}] ${line}\n`);
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(lines) : reject(new Error(`bench worker ${label} exited with ${code}`))));
  });
};

/** The first line of that kind, or an error naming the worker. */
export const lineOf = <Line extends { kind: string }, Kind extends Line['kind']>(lines: Line[], kind: Kind, label: string): Extract<Line, { kind: Kind }> => {
  const line = lines.find((candidate): candidate is Extract<Line, { kind: Kind }> => candidate.kind === kind);
  if (!line) throw new Error(`bench worker ${label} exited without reporting ${kind}`);
  return line;
};
