import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { exitWithin, FleetProcess, forkNode, killAll, untilReady } from '../support/fleet';
import type { ChaosConfig } from './chaos.config';
import { CHAOS_PROTOCOL, type ChaosWorkerSettings, type OrchestratorMessage, type WorkerMessage } from './chaos.protocol';

const WORKER_ENTRY = join(__dirname, 'worker.ts');
const REPOSITORY = join(__dirname, '..', '..');

export interface HeldRun {
  fencingToken: number;
  /** When the orchestrator heard the callback start, and how long it plans to work. */
  startedAt: number;
  workMs: number;
}

/** One worker process, as the orchestrator sees it. */
export class ChaosWorker extends FleetProcess<OrchestratorMessage, WorkerMessage> {
  paused = false;
  /** When it was last resumed after a pause (0: never paused). */
  resumedAt = 0;
  /** Killed by the orchestrator on purpose (SIGKILL): its exit is not a crash. */
  killed = false;
  stopRequested = false;
  readonly inFlight = new Map<string, HeldRun>();

  constructor(
    readonly slot: number,
    readonly generation: number,
    readonly nodeId: string,
    child: ChildProcess,
    readonly eventsFile: string,
    outputFile: string,
    readonly clockSkewMs: number,
  ) {
    super(`worker ${nodeId}`, child, outputFile);
  }

  /** Exited without being killed by the orchestrator or asked to stop and exiting cleanly. */
  get crashed(): boolean {
    if (!this.exit || this.killed) return false;
    return !(this.stopRequested && this.exit.code === 0);
  }
}

/**
 * The worker processes: one per slot at any time. A killed worker is replaced at once by a new
 * process (the next generation of its slot), as an orchestrator such as Kubernetes would do.
 */
export class ChaosFleet {
  readonly all: ChaosWorker[] = [];
  private readonly current = new Map<number, ChaosWorker>();
  private lastTick = -1;

  constructor(
    private readonly config: ChaosConfig,
    private readonly runDirectory: string,
    private readonly databaseUrl: string,
    private readonly skewedSlot: number,
  ) {}

  /** Starts one worker per slot and waits until every one is ready. */
  async start(timeoutMs: number): Promise<void> {
    const workers = Array.from({ length: this.config.workers }, (_, slot) => this.spawn(slot));
    await untilReady(workers, timeoutMs);
  }

  /** Live workers, in slot order. */
  live(): ChaosWorker[] {
    return [...this.current.values()].filter((worker) => worker.alive).sort((a, b) => a.slot - b.slot);
  }

  tick(index: number): void {
    this.lastTick = index;
    for (const worker of this.live()) if (worker.ready) worker.send({ type: 'tick', index });
  }

  /** SIGKILL, then a replacement process in the same slot (not awaited: it joins when ready). */
  async kill(worker: ChaosWorker): Promise<void> {
    worker.killed = true;
    worker.kill();
    await worker.exited;
    worker.inFlight.clear();
    this.spawn(worker.slot);
  }

  pause(worker: ChaosWorker): void {
    worker.paused = true;
    worker.signal('SIGSTOP');
  }

  resume(worker: ChaosWorker): void {
    worker.signal('SIGCONT');
    worker.paused = false;
    worker.resumedAt = Date.now();
  }

  /** Runs any worker still has under way (callbacks started, not yet ended). */
  inFlightCount(): number {
    return this.live().reduce((sum, worker) => sum + worker.inFlight.size, 0);
  }

  /**
   * Asks every worker to stop and waits; whoever has not exited in time is killed. A replacement
   * still booting (not ready: it never got a tick, and cannot hear "stop" yet) is killed at once,
   * on purpose: on a slow machine it used to be killed at the timeout and counted as a crash.
   */
  async stop(timeoutMs: number): Promise<void> {
    const live = this.live();
    for (const worker of live) {
      if (!worker.ready) {
        worker.killed = true;
        worker.kill();
        continue;
      }
      worker.stopRequested = true;
      if (worker.paused) this.resume(worker);
      worker.send({ type: 'stop' });
    }
    await exitWithin(live, timeoutMs);
  }

  /** Synchronous last resort (exit handlers, failures): no worker process survives this. */
  killAll(): void {
    killAll(this.all);
  }

  private spawn(slot: number): ChaosWorker {
    const generation = this.all.filter((worker) => worker.slot === slot).length + 1;
    const clockSkewMs = slot === this.skewedSlot ? this.config.clockSkewMs : 0;
    const nodeId = `w${slot}.${generation}${clockSkewMs ? '.skewed' : ''}`;
    const eventsFile = join(this.runDirectory, `events-${nodeId}.jsonl`);
    const outputFile = join(this.runDirectory, `output-${nodeId}.log`);
    const settings: ChaosWorkerSettings = {
      slot,
      generation,
      nodeId,
      databaseUrl: this.databaseUrl,
      seed: this.config.seed,
      codes: this.config.codes,
      ticks: this.config.ticks,
      leaseMs: this.config.leaseMs,
      heartbeatMs: this.config.heartbeatMs,
      workMinMs: this.config.workMinMs,
      workMaxMs: this.config.workMaxMs,
      plannedFailureRate: this.config.plannedFailureRate,
      sweepMs: this.config.sweepMs,
      clockSkewMs,
      eventsFile,
    };
    const child = forkNode(WORKER_ENTRY, { cwd: REPOSITORY, env: { ...process.env, ...CHAOS_PROTOCOL.environment(settings) }, outputFile });
    const worker = new ChaosWorker(slot, generation, nodeId, child, eventsFile, outputFile, clockSkewMs);
    worker.onMessage((message) => this.onMessage(worker, message));
    this.all.push(worker);
    this.current.set(slot, worker);
    return worker;
  }

  private onMessage(worker: ChaosWorker, message: WorkerMessage): void {
    switch (message.type) {
      case 'ready':
        // A late joiner starts at the current tick; earlier ones are its sweeper's business.
        if (this.lastTick >= 0) worker.send({ type: 'tick', index: this.lastTick });
        break;
      case 'run-start':
        worker.inFlight.set(message.key, { fencingToken: message.fencingToken, startedAt: Date.now(), workMs: message.workMs });
        break;
      case 'run-end':
        if (worker.inFlight.get(message.key)?.fencingToken === message.fencingToken) worker.inFlight.delete(message.key);
        break;
    }
  }
}
