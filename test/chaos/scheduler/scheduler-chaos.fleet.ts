import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exitWithin, FleetProcess, forkNode, killAll, realNow, sleep, untilReady } from '../../support/fleet';
import { type InstanceMessage, type InstanceSettings, type OrchestratorMessage, SCHEDULER_CHAOS_PROTOCOL } from './scheduler-chaos.protocol';

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
export class ChaosInstance extends FleetProcess<OrchestratorMessage, InstanceMessage> {
  /** SIGTERM sent (graceful close under way). */
  closingMs: number | undefined;
  /** SIGKILL sent by the orchestrator. */
  killedMs: number | undefined;
  readonly stops: StopInterval[] = [];
  readonly inFlight = new Map<string, { code: string; runKey: string; startedMs: number; plannedMs: number }>();

  constructor(
    readonly slot: number,
    readonly generation: number,
    readonly nodeId: string,
    child: ChildProcess,
    readonly proxied: boolean,
    readonly journalFile: string,
    outputFile: string,
    /** The libfaketime offset file of a clock-stepped instance. */
    readonly clockFile: string | undefined,
  ) {
    super(`instance ${nodeId}`, child, outputFile);
  }

  protected override afterExit(): void {
    const open = this.stops.at(-1);
    if (open && open.toMs === undefined) open.toMs = this.exitMs;
  }

  get paused(): boolean {
    const last = this.stops.at(-1);
    return last !== undefined && last.toMs === undefined;
  }

  /** Up, ready, not stopped, not closing: can run jobs now. */
  get healthy(): boolean {
    return this.ready && !this.paused && this.closingMs === undefined;
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
    await untilReady(instances, timeoutMs);
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
    instance.kill();
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
    instance.signal('SIGTERM');
    const closed = await Promise.race([instance.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
    if (!closed) {
      instance.killedMs = realNow();
      instance.kill();
      await instance.exited;
    }
    instance.inFlight.clear();
    if (!this.stopping) this.spawn(instance.slot);
    return closed ? 'closed' : 'killed';
  }

  pause(instance: ChaosInstance): void {
    instance.stops.push({ fromMs: realNow() });
    instance.signal('SIGSTOP');
  }

  resume(instance: ChaosInstance): void {
    instance.signal('SIGCONT');
    const open = instance.stops.at(-1);
    if (open && open.toMs === undefined) open.toMs = realNow();
  }

  /** Asks every instance to close (SIGTERM) and waits; whoever has not exited in time is killed. */
  async stopAll(timeoutMs: number): Promise<void> {
    this.stopping = true;
    const live = this.live();
    for (const instance of live) {
      if (instance.paused) this.resume(instance);
      if (instance.closingMs === undefined) {
        instance.closingMs = realNow();
        instance.signal('SIGTERM');
      }
    }
    await exitWithin(live, timeoutMs, (instance) => {
      instance.killedMs = realNow();
    });
    await Promise.all(this.all.map((instance) => instance.exited));
  }

  /** Synchronous last resort (exit handlers, failures): no instance process survives this. */
  killAll(): void {
    killAll(this.all);
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
    const env: NodeJS.ProcessEnv = { ...process.env, ...SCHEDULER_CHAOS_PROTOCOL.environment(instanceSettings), NO_COLOR: '1' };
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
    const child = forkNode(settings.entry.file, { cwd: REPOSITORY, env, outputFile });
    const instance = new ChaosInstance(slot, generation, nodeId, child, proxied, journalFile, outputFile, clockFile);
    instance.onMessage((message) => this.onMessage(instance, message));
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
      case 'run-start':
        instance.inFlight.set(message.runId, { code: message.code, runKey: message.runKey, startedMs: realNow(), plannedMs: message.plannedMs });
        break;
      case 'run-end':
        instance.inFlight.delete(message.runId);
        break;
    }
  }
}
