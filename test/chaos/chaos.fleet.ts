import { type ChildProcess, fork } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChaosConfig } from './chaos.config';
import type { ChaosWorkerSettings, OrchestratorMessage, WorkerMessage } from './chaos.protocol';

const WORKER_ENTRY = join(__dirname, 'worker.ts');
const REPOSITORY = join(__dirname, '..', '..');

export interface HeldRun {
  fencingToken: number;
  /** When the orchestrator heard the callback start, and how long it plans to work. */
  startedAt: number;
  workMs: number;
}

/** One worker process, as the orchestrator sees it. */
export class ChaosWorker {
  ready = false;
  paused = false;
  /** When it was last resumed after a pause (0: never paused). */
  resumedAt = 0;
  /** Killed by the orchestrator on purpose (SIGKILL): its exit is not a crash. */
  killed = false;
  stopRequested = false;
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly inFlight = new Map<string, HeldRun>();
  readonly exited: Promise<void>;

  constructor(
    readonly slot: number,
    readonly generation: number,
    readonly nodeId: string,
    readonly child: ChildProcess,
    readonly eventsFile: string,
    readonly outputFile: string,
    readonly clockSkewMs: number,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        this.ready = false;
        resolve();
      }),
    );
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  /** Exited without being killed by the orchestrator or asked to stop and exiting cleanly. */
  get crashed(): boolean {
    if (!this.exit || this.killed) return false;
    return !(this.stopRequested && this.exit.code === 0);
  }

  outputTail(): string {
    try {
      return readFileSync(this.outputFile, 'utf8').slice(-2_000);
    } catch {
      return '';
    }
  }

  send(message: OrchestratorMessage): void {
    if (this.alive && this.child.connected) this.child.send(message, undefined, {}, () => undefined);
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
    await this.untilReady(workers, timeoutMs);
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
    if (worker.paused) worker.child.kill('SIGCONT');
    worker.child.kill('SIGKILL');
    await worker.exited;
    worker.inFlight.clear();
    this.spawn(worker.slot);
  }

  pause(worker: ChaosWorker): void {
    worker.paused = true;
    worker.child.kill('SIGSTOP');
  }

  resume(worker: ChaosWorker): void {
    worker.child.kill('SIGCONT');
    worker.paused = false;
    worker.resumedAt = Date.now();
  }

  /** Runs any worker still has under way (callbacks started, not yet ended). */
  inFlightCount(): number {
    return this.live().reduce((sum, worker) => sum + worker.inFlight.size, 0);
  }

  /** Asks every worker to stop and waits; whoever has not exited in time is killed. */
  async stop(timeoutMs: number): Promise<void> {
    const live = this.live();
    for (const worker of live) {
      worker.stopRequested = true;
      if (worker.paused) this.resume(worker);
      worker.send({ type: 'stop' });
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(live.map((worker) => worker.exited)),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    for (const worker of live) if (worker.alive) worker.child.kill('SIGKILL');
    await Promise.all(live.map((worker) => worker.exited));
  }

  /** Synchronous last resort (exit handlers, failures): no worker process survives this. */
  killAll(): void {
    for (const worker of this.all) {
      if (!worker.alive) continue;
      try {
        worker.child.kill('SIGCONT');
        worker.child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
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
    const output = openSync(outputFile, 'a');
    let child: ChildProcess;
    try {
      child = fork(WORKER_ENTRY, [], {
        cwd: REPOSITORY,
        execArgv: ['-r', 'ts-node/register/transpile-only'],
        env: { ...process.env, CHAOS_WORKER: JSON.stringify(settings) },
        stdio: ['ignore', output, output, 'ipc'],
      });
    } finally {
      closeSync(output);
    }
    const worker = new ChaosWorker(slot, generation, nodeId, child, eventsFile, outputFile, clockSkewMs);
    child.on('message', (message: WorkerMessage) => this.onMessage(worker, message));
    child.on('error', () => undefined);
    this.all.push(worker);
    this.current.set(slot, worker);
    return worker;
  }

  private onMessage(worker: ChaosWorker, message: WorkerMessage): void {
    switch (message.type) {
      case 'ready':
        worker.ready = true;
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

  private async untilReady(workers: ChaosWorker[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!workers.every((worker) => worker.ready)) {
      const dead = workers.find((worker) => !worker.alive);
      if (dead) throw new Error(`worker ${dead.nodeId} exited while booting:\n${dead.outputTail()}`);
      if (Date.now() > deadline) throw new Error(`workers not ready within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
