import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { exitWithin, FleetProcess, forkNode, killAll, untilReady, waitUntil } from '../support/fleet';
import type { FailoverConfig } from './failover.config';
import { FAILOVER_PROTOCOL, type FailoverNodeSettings, type LeakCounts, type NodeMessage, type OrchestratorMessage } from './failover.protocol';

const NODE_ENTRY = join(__dirname, 'worker.ts');
const REPOSITORY = join(__dirname, '..', '..');

/** One node process, as the orchestrator sees it. */
export class FailoverNodeProcess extends FleetProcess<OrchestratorMessage, NodeMessage> {
  idle = false;
  final: { leaks: LeakCounts; ownerTokens: string[] } | undefined;

  constructor(
    readonly nodeId: string,
    child: ChildProcess,
    readonly eventsFile: string,
    outputFile: string,
  ) {
    super(`node ${nodeId}`, child, outputFile);
    this.onMessage((message) => {
      if (message.type === 'idle') this.idle = true;
      if (message.type === 'final') this.final = { leaks: message.leaks, ownerTokens: message.ownerTokens };
    });
  }

  /** Exited otherwise than with code 0 after a shutdown it was asked for. */
  get crashed(): boolean {
    return this.exit !== undefined && !(this.exit.code === 0 && this.final !== undefined);
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
    await untilReady(this.nodes, timeoutMs, 100);
  }

  broadcast(message: OrchestratorMessage): void {
    for (const node of this.nodes) node.send(message);
  }

  /** Waits until every node has had a definite answer for every tick (or gave it up). */
  async untilIdle(timeoutMs: number): Promise<boolean> {
    try {
      await waitUntil(() => this.nodes.every((node) => node.idle), { what: 'nodes idle', timeoutMs, intervalMs: 100, watch: this.nodes });
      return true;
    } catch {
      return false;
    }
  }

  /** Asks every node to shut down (release, close its pool, report) and waits; kills laggards. */
  async shutdown(timeoutMs: number): Promise<void> {
    this.broadcast({ type: 'shutdown' });
    await exitWithin(this.nodes, timeoutMs);
  }

  /** Synchronous last resort (exit handlers, failures). */
  killAll(): void {
    killAll(this.nodes);
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
    const environment: NodeJS.ProcessEnv = { ...process.env, ...FAILOVER_PROTOCOL.environment(settings) };
    for (const name of Object.keys(environment)) if (name.startsWith('PG')) delete environment[name];
    return new FailoverNodeProcess(nodeId, forkNode(NODE_ENTRY, { cwd: REPOSITORY, env: environment, outputFile }), eventsFile, outputFile);
  }
}
