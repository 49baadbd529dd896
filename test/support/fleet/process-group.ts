import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { TS_NODE_ARGUMENTS } from './fleet-process';
import { JsonLineCollector } from './json-lines';
import { killGroup } from './teardown';

/**
 * A child of an integration test: a command in a process group of its own, its stdout and stderr
 * collected (and, with `jsonLines`, its JSON lines parsed as they come: a child that reports so).
 * `kill()` ends the whole group (the command and every process it started), also when the test
 * fails or times out.
 */
export class ProcessGroup<Line = Record<string, unknown>> {
  readonly child: ChildProcess;
  private readonly collector: JsonLineCollector<Line>;
  /** Resolves when the leader exits. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;

  constructor(
    readonly name: string,
    command: string,
    args: string[],
    options: { cwd: string; env?: NodeJS.ProcessEnv; jsonLines?: boolean },
  ) {
    this.collector = new JsonLineCollector<Line>(options.jsonLines ?? false);
    this.child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })));
    const take = (chunk: Buffer) => this.collector.take(chunk);
    this.child.stdout?.on('data', take);
    this.child.stderr?.on('data', take);
  }

  /** A TypeScript entry run with ts-node, as its own process group, that reports in JSON lines. */
  static node<Line = Record<string, unknown>>(name: string, entry: string, options: { cwd: string; env?: NodeJS.ProcessEnv }): ProcessGroup<Line> {
    return new ProcessGroup<Line>(name, process.execPath, [...TS_NODE_ARGUMENTS, entry], { ...options, jsonLines: true });
  }

  /** stdout and stderr, interleaved as they came. */
  get output(): string {
    return this.collector.text;
  }

  /** The JSON lines printed so far (with `jsonLines`). */
  get lines(): readonly Line[] {
    return this.collector.lines;
  }

  /** Exited (or was killed) already. */
  get done(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Signals the leader only (SIGTERM: let it close by itself). */
  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** SIGKILLs the process group, stopped members included. */
  kill(): void {
    killGroup(this.child.pid);
  }
}

export interface ChildRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** stdout and stderr, interleaved as they came. */
  output: string;
}

/** Runs a command to its end as a process group of its own (an orchestrator run by a test); `kill()` ends the group. */
export class GroupedChild {
  private group: ProcessGroup | undefined;

  run(command: string, args: string[], options: { cwd: string; timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<ChildRun> {
    return new Promise((resolve, reject) => {
      const group = new ProcessGroup(command, command, args, options);
      this.group = group;
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error(`${command} ${args.join(' ')} did not finish within ${options.timeoutMs} ms:\n${group.output}`));
      }, options.timeoutMs);
      group.child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      group.child.once('close', (exitCode, signal) => {
        clearTimeout(timer);
        resolve({ exitCode, signal, output: group.output });
      });
    });
  }

  /**
   * Runs an orchestrator (test/chaos/main.ts, test/failover/main.ts...) to its end and reads the
   * JSON report it wrote; without one, throws with its output. Its output is printed when the
   * report says a check failed.
   */
  async runForReport<Report extends { ok: boolean }>(options: {
    /** Named in the error: `the <what> run wrote no report`. */
    what: string;
    entry: string;
    args: string[];
    reportFile: string;
    cwd: string;
    timeoutMs: number;
  }): Promise<{ report: Report; run: ChildRun }> {
    const run = await this.run(process.execPath, [...TS_NODE_ARGUMENTS, options.entry, ...options.args], { cwd: options.cwd, timeoutMs: options.timeoutMs });
    const text = await readFile(options.reportFile, 'utf8').catch(() => undefined);
    if (text === undefined) throw new Error(`the ${options.what} run wrote no report (exit ${run.exitCode ?? run.signal}):\n${run.output}`);
    const report = JSON.parse(text) as Report;
    if (!report.ok) process.stdout.write(`\n${run.output}\n`);
    return { report, run };
  }

  kill(): void {
    this.group?.kill();
  }
}
