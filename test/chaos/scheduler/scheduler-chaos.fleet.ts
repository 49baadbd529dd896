import { type ChildProcess, fork } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InstanceMessage, InstanceSettings, OrchestratorMessage } from './scheduler-chaos.protocol';
import { realNow } from './scheduler-chaos.protocol';

const REPOSITORY = join(__dirname, '..', '..', '..');

/** Debian's libfaketime (package faketime), multi-threaded flavour: Node runs several threads. */
export const findLibfaketime = (): string | undefined => {
  const candidates = ['/usr/lib/faketime/libfaketimeMT.so.1'];
  try {
    for (const entry of readdirSync('/usr/lib')) candidates.push(join('/usr/lib', entry, 'faketime', 'libfaketimeMT.so.1'));
  } catch {
    // no /usr/lib
  }
  return candidates.find((path) => existsSync(path));
};

export interface StopInterval {
  fromMs: number;
  toMs?: number;
}

/** One instance process, as the orchestrator sees it. */
export class ChaosInstance {
  readyMs: number | undefined;
  /** SIGTERM sent (graceful close under way). */
  closingMs: number | undefined;
  /** SIGKILL sent by the orchestrator. */
  killedMs: number | undefined;
  exitMs: number | undefined;
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly stops: StopInterval[] = [];
  readonly inFlight = new Map<string, { code: string; runKey: string; startedMs: number; plannedMs: number }>();
  readonly exited: Promise<void>;

  constructor(
    readonly slot: number,
    readonly generation: number,
    readonly nodeId: string,
    readonly child: ChildProcess,
    readonly spawnedMs: number,
    readonly proxied: boolean,
    readonly journalFile: string,
    readonly outputFile: string,
    /** The libfaketime offset file of a clock-stepped instance. */
    readonly clockFile: string | undefined,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        this.exitMs = realNow();
        const open = this.stops.at(-1);
        if (open && open.toMs === undefined) open.toMs = this.exitMs;
        resolve();
      }),
    );
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  get paused(): boolean {
    const last = this.stops.at(-1);
    return last !== undefined && last.toMs === undefined;
  }

  /** Up, ready, not stopped, not closing: can run jobs now. */
  get healthy(): boolean {
    return this.alive && this.readyMs !== undefined && !this.paused && this.closingMs === undefined;
  }

  /**
   * Exited without the orchestrator killing it or asking it to close: a close asked for ends in
   * exit 0, or in SIGTERM's default action while the instance still boots (no handler yet).
   */
  get crashed(): boolean {
    if (!this.exit || this.killedMs !== undefined) return false;
    if (this.closingMs === undefined) return true;
    return !(this.exit.code === 0 || (this.exit.signal === 'SIGTERM' && this.readyMs === undefined));
  }

  outputTail(): string {
    try {
      return readFileSync(this.outputFile, 'utf8').slice(-3_000);
    } catch {
      return '';
    }
  }

  send(message: OrchestratorMessage): void {
    if (this.alive && this.child.connected) this.child.send(message, undefined, {}, () => undefined);
  }

  /** Sets the libfaketime offset (seconds, signed) this process reads within a second. */
  setClockOffset(offsetMs: number): void {
    if (!this.clockFile) throw new Error(`${this.nodeId} runs without libfaketime`);
    const seconds = Math.round(offsetMs / 1_000);
    writeFileSync(this.clockFile, `${seconds >= 0 ? '+' : ''}${seconds}\n`);
  }
}

export interface FleetSettings {
  instances: number;
  seed: number;
  runDirectory: string;
  directUrl: string;
  proxiedUrl: string;
  proxiedSlots: ReadonlySet<number>;
  /** The slot whose processes run under libfaketime (undefined: none). */
  clockSlot: number | undefined;
  libfaketime: string | undefined;
  /** The instance entry transpiled ahead (scheduler-chaos.build.ts), or the TypeScript one run through ts-node. */
  entry: { file: string; nodePath?: string };
}

/**
 * The instance processes: one per slot at any time. A killed instance is replaced at once by a
 * new process, a terminated one once it has exited, as an orchestrator such as Kubernetes would.
 */
export class ChaosFleet {
  readonly all: ChaosInstance[] = [];
  private readonly current = new Map<number, ChaosInstance>();
  private stopping = false;

  constructor(private readonly settings: FleetSettings) {}

  async start(timeoutMs: number): Promise<void> {
    const instances = Array.from({ length: this.settings.instances }, (_, slot) => this.spawn(slot));
    await this.untilReady(instances, timeoutMs);
  }

  live(): ChaosInstance[] {
    return [...this.current.values()].filter((instance) => instance.alive).sort((a, b) => a.slot - b.slot);
  }

  healthy(): ChaosInstance[] {
    return this.live().filter((instance) => instance.healthy);
  }

  /** Slots without a healthy instance right now (stopped, dead, closing or booting). */
  downCount(): number {
    return this.settings.instances - this.healthy().length;
  }

  currentOf(slot: number): ChaosInstance | undefined {
    return this.current.get(slot);
  }

  /** SIGKILL, then a replacement in the same slot (not awaited: it joins when ready). */
  async kill(instance: ChaosInstance): Promise<void> {
    instance.killedMs = realNow();
    if (instance.paused) instance.child.kill('SIGCONT');
    instance.child.kill('SIGKILL');
    await instance.exited;
    instance.inFlight.clear();
    if (!this.stopping) this.spawn(instance.slot);
  }

  /**
   * SIGTERM (the instance closes its application and exits), then a replacement once it has
   * exited. One that has not exited within `timeoutMs` is killed: a crash, recorded as such.
   */
  async terminate(instance: ChaosInstance, timeoutMs: number): Promise<'closed' | 'killed'> {
    instance.closingMs = realNow();
    instance.child.kill('SIGTERM');
    const closed = await Promise.race([instance.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
    if (!closed) {
      instance.killedMs = realNow();
      instance.child.kill('SIGKILL');
      await instance.exited;
    }
    instance.inFlight.clear();
    if (!this.stopping) this.spawn(instance.slot);
    return closed ? 'closed' : 'killed';
  }

  pause(instance: ChaosInstance): void {
    instance.stops.push({ fromMs: realNow() });
    instance.child.kill('SIGSTOP');
  }

  resume(instance: ChaosInstance): void {
    instance.child.kill('SIGCONT');
    const open = instance.stops.at(-1);
    if (open && open.toMs === undefined) open.toMs = realNow();
  }

  async untilReady(instances: ChaosInstance[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!instances.every((instance) => instance.readyMs !== undefined)) {
      const dead = instances.find((instance) => !instance.alive);
      if (dead) throw new Error(`instance ${dead.nodeId} exited while booting:\n${dead.outputTail()}`);
      if (Date.now() > deadline) throw new Error(`instances not ready within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  /** Asks every instance to close (SIGTERM) and waits; whoever has not exited in time is killed. */
  async stopAll(timeoutMs: number): Promise<void> {
    this.stopping = true;
    const live = this.live();
    for (const instance of live) {
      if (instance.paused) this.resume(instance);
      if (instance.closingMs === undefined) {
        instance.closingMs = realNow();
        instance.child.kill('SIGTERM');
      }
    }
    await Promise.race([Promise.all(live.map((instance) => instance.exited)), sleep(timeoutMs)]);
    for (const instance of live) {
      if (!instance.alive) continue;
      instance.killedMs = realNow();
      instance.child.kill('SIGKILL');
    }
    await Promise.all(this.all.map((instance) => instance.exited));
  }

  /** Synchronous last resort (exit handlers, failures): no instance process survives this. */
  killAll(): void {
    for (const instance of this.all) {
      if (!instance.alive) continue;
      try {
        instance.child.kill('SIGCONT');
        instance.child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  private spawn(slot: number): ChaosInstance {
    const { settings } = this;
    const generation = this.all.filter((instance) => instance.slot === slot).length + 1;
    const proxied = settings.proxiedSlots.has(slot);
    const stepped = slot === settings.clockSlot && settings.libfaketime !== undefined;
    const nodeId = `i${slot}.${generation}`;
    const journalFile = join(settings.runDirectory, `journal-${nodeId}.jsonl`);
    const outputFile = join(settings.runDirectory, `output-${nodeId}.log`);
    const clockFile = stepped ? join(settings.runDirectory, `faketime-${nodeId}`) : undefined;
    if (clockFile) writeFileSync(clockFile, '+0\n');
    const instanceSettings: InstanceSettings = {
      nodeId,
      slot,
      generation,
      databaseUrl: proxied ? settings.proxiedUrl : settings.directUrl,
      recorderUrl: settings.directUrl,
      journalFile,
      seed: settings.seed,
    };
    const env: NodeJS.ProcessEnv = { ...process.env, SCHED_CHAOS_INSTANCE: JSON.stringify(instanceSettings), NO_COLOR: '1' };
    if (settings.entry.nodePath) env.NODE_PATH = settings.entry.nodePath;
    if (clockFile && settings.libfaketime) {
      // The wall clock only: timers and performance.now() read CLOCK_MONOTONIC, as after a real step.
      Object.assign(env, {
        LD_PRELOAD: settings.libfaketime,
        FAKETIME_TIMESTAMP_FILE: clockFile,
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
        FAKETIME_CACHE_DURATION: '1',
      });
    }
    const output = openSync(outputFile, 'a');
    let child: ChildProcess;
    try {
      child = fork(settings.entry.file, [], {
        cwd: REPOSITORY,
        execArgv: settings.entry.file.endsWith('.ts') ? ['-r', 'ts-node/register/transpile-only'] : ['--enable-source-maps'],
        env,
        stdio: ['ignore', output, output, 'ipc'],
      });
    } finally {
      closeSync(output);
    }
    const instance = new ChaosInstance(slot, generation, nodeId, child, realNow(), proxied, journalFile, outputFile, clockFile);
    child.on('message', (message: InstanceMessage) => this.onMessage(instance, message));
    child.on('error', () => undefined);
    this.all.push(instance);
    this.current.set(slot, instance);
    // An instance that crashed by itself is replaced too (the crash is reported as a problem).
    void instance.exited.then(() => {
      if (!this.stopping && instance.crashed && this.current.get(slot) === instance) this.spawn(slot);
    });
    return instance;
  }

  private onMessage(instance: ChaosInstance, message: InstanceMessage): void {
    switch (message.type) {
      case 'ready':
        instance.readyMs = realNow();
        break;
      case 'run-start':
        instance.inFlight.set(message.runId, { code: message.code, runKey: message.runKey, startedMs: realNow(), plannedMs: message.plannedMs });
        break;
      case 'run-end':
        instance.inFlight.delete(message.runId);
        break;
    }
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
