import { type ChildProcess, fork } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from '../chaos/chaos.admin';
import type { FailoverConfig } from './failover.config';
import type { FailoverNodeSettings, LeakCounts, NodeMessage, OrchestratorMessage } from './failover.protocol';

const NODE_ENTRY = join(__dirname, 'worker.ts');
const REPOSITORY = join(__dirname, '..', '..');

/** One node process, as the orchestrator sees it. */
export class FailoverNodeProcess {
  ready = false;
  idle = false;
  final: { leaks: LeakCounts; ownerTokens: string[] } | undefined;
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<void>;

  constructor(
    readonly nodeId: string,
    readonly child: ChildProcess,
    readonly eventsFile: string,
    readonly outputFile: string,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve();
      }),
    );
    child.on('error', () => undefined);
    child.on('message', (message: NodeMessage) => {
      if (message.type === 'ready') this.ready = true;
      if (message.type === 'idle') this.idle = true;
      if (message.type === 'final') this.final = { leaks: message.leaks, ownerTokens: message.ownerTokens };
    });
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  /** Exited otherwise than with code 0 after a shutdown it was asked for. */
  get crashed(): boolean {
    return this.exit !== undefined && !(this.exit.code === 0 && this.final !== undefined);
  }

  send(message: OrchestratorMessage): void {
    if (this.alive && this.child.connected) this.child.send(message, undefined, {}, () => undefined);
  }

  output(): string {
    try {
      return readFileSync(this.outputFile, 'utf8');
    } catch {
      return '';
    }
  }
}

/** The node processes: each its own pool through HAProxy and its own JobSchedulerService. */
export class FailoverFleet {
  readonly nodes: FailoverNodeProcess[] = [];

  constructor(
    private readonly config: FailoverConfig,
    private readonly runDir: string,
    private readonly databaseUrl: string,
  ) {}

  async start(timeoutMs: number): Promise<void> {
    for (let index = 0; index < this.config.nodes; index++) this.nodes.push(this.spawn(`n${index}`));
    await this.until(() => this.nodes.every((node) => node.ready), timeoutMs, 'nodes ready');
  }

  broadcast(message: OrchestratorMessage): void {
    for (const node of this.nodes) node.send(message);
  }

  /** Waits until every node has had a definite answer for every tick (or gave it up). */
  async untilIdle(timeoutMs: number): Promise<boolean> {
    try {
      await this.until(() => this.nodes.every((node) => node.idle), timeoutMs, 'nodes idle');
      return true;
    } catch {
      return false;
    }
  }

  /** Asks every node to shut down (release, close its pool, report) and waits; kills laggards. */
  async shutdown(timeoutMs: number): Promise<void> {
    this.broadcast({ type: 'shutdown' });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.nodes.map((node) => node.exited)),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    this.killAll();
    await Promise.all(this.nodes.map((node) => node.exited));
  }

  /** Synchronous last resort (exit handlers, failures). */
  killAll(): void {
    for (const node of this.nodes) {
      if (!node.alive) continue;
      try {
        node.child.kill('SIGKILL');
      } catch {
        // gone
      }
    }
  }

  private spawn(nodeId: string): FailoverNodeProcess {
    const eventsFile = join(this.runDir, `events-${nodeId}.jsonl`);
    const outputFile = join(this.runDir, `output-${nodeId}.log`);
    const { config } = this;
    const settings: FailoverNodeSettings = {
      nodeId,
      databaseUrl: this.databaseUrl,
      eventsFile,
      seed: config.seed,
      code: 'failover-proof',
      tickMs: config.tickMs,
      leaseMs: config.leaseMs,
      heartbeatMs: config.heartbeatMs,
      workMinMs: config.workMinMs,
      workMaxMs: config.workMaxMs,
      retryMinMs: config.retryMinMs,
      retryMaxMs: config.retryMaxMs,
      giveUpMs: config.giveUpMs,
      poolSize: config.poolSize,
    };
    const output = openSync(outputFile, 'a');
    let child: ChildProcess;
    try {
      const environment: NodeJS.ProcessEnv = { ...process.env, FAILOVER_NODE: JSON.stringify(settings) };
      for (const name of Object.keys(environment)) if (name.startsWith('PG')) delete environment[name];
      child = fork(NODE_ENTRY, [], {
        cwd: REPOSITORY,
        execArgv: ['-r', 'ts-node/register/transpile-only'],
        env: environment,
        stdio: ['ignore', output, output, 'ipc'],
      });
    } finally {
      closeSync(output);
    }
    return new FailoverNodeProcess(nodeId, child, eventsFile, outputFile);
  }

  private async until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      const dead = this.nodes.find((node) => !node.alive);
      if (dead) throw new Error(`node ${dead.nodeId} exited while waiting for ${what}:\n${dead.output().slice(-2_000)}`);
      if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
      await sleep(100);
    }
  }
}
