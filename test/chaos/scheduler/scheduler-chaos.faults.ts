import { realNow, sleep, untilReady } from '../../support/fleet';
import type { TcpProxy } from '../../support/tcp-proxy';
import { tryAdminQuery } from '../chaos.admin';
import { seededRandom, type SeededRandom } from '../chaos.random';
import { DYNAMIC_LEASE_MS, LEASE_MS, LIBRARY_DEFAULTS } from './scheduler-chaos.catalogue';
import type { SchedulerChaosConfig } from './scheduler-chaos.config';
import type { ChaosFleet, ChaosInstance } from './scheduler-chaos.fleet';
import type { FaultEvent } from './scheduler-chaos.verdict';

export type FaultKind =
  | 'kill-mid-run'
  | 'kill-before-instant'
  | 'term-random'
  | 'term-before-instant'
  | 'rolling-restart'
  | 'short-stall'
  | 'long-stall'
  | 'backend-kill'
  | 'outage'
  | 'clock-step';

export interface PlannedFault {
  kind: FaultKind;
  /** Milliseconds after the start of the window. */
  atMs: number;
  /** Seeds the choices made when it happens (which instance, how long, which instant). */
  choiceSeed: number;
}

/**
 * The grids of the schedules' due instants (ms): "just before an instant" picks one of them, most
 * often an instant of 5 s, where the declared jobs, the @RunOnce cron and a dynamic schedule are
 * due together (and the tenants' job, every other time).
 */
const INSTANT_GRIDS = [3_000, 4_000, 5_000, 5_000, 5_000, 10_000];

/** The fault plan of a run: a pure function of its configuration (seed included). */
export const planFaults = (config: SchedulerChaosConfig): PlannedFault[] => {
  const random = seededRandom(config.seed);
  const span = config.windowMs - config.quietEndMs;
  const choice = (): number => random.int(1, 2 ** 31 - 2);
  /** `count` instants spread over [from, to] of the faulty span, one in each equal part. */
  const spread = (kind: FaultKind, count: number, from: number, to: number): PlannedFault[] =>
    Array.from({ length: count }, (_, index) => {
      const width = (to - from) / count;
      const at = from + index * width + random.next() * width;
      return { kind, atMs: Math.round(span * at), choiceSeed: choice() };
    });
  const faults = [
    // Long stalls early: the take-over of what they held happens inside the window.
    ...spread('long-stall', config.longStalls, 0.05, 0.45),
    ...spread('short-stall', config.shortStalls, 0.3, 0.85),
    ...spread('kill-mid-run', config.killsMidRun, 0.05, 0.8),
    ...spread('kill-before-instant', config.killsBeforeInstant, 0.1, 0.85),
    ...spread('term-random', config.termsRandom, 0.1, 0.9),
    ...spread('term-before-instant', config.termsBeforeInstant, 0.05, 0.9),
    ...spread('rolling-restart', config.rollingRestarts, 0.05, 0.7),
    ...spread('backend-kill', config.backendKillBursts, 0.02, 0.98),
    ...spread('outage', config.outages, 0.1, 0.9),
    ...spread('clock-step', config.clockSteps, 0.15, 0.6),
  ];
  return faults.sort((a, b) => a.atMs - b.atMs);
};

/**
 * Carries out planned faults against the fleet, the proxy and the database, and writes down each
 * one as it happened (real times) for the verdict. A fault that cannot be carried out as planned
 * is a problem: the run then proves less than it says.
 */
export class SchedulerChaosFaults {
  readonly events: FaultEvent[] = [];
  readonly problems: string[] = [];
  /** Process-level faults wait for each other where they would take too many instances down. */
  private busySlots = new Set<number>();
  /** The proxy is cut: the proxied instances count as down. */
  private cut = false;

  constructor(
    private readonly config: SchedulerChaosConfig,
    private readonly fleet: ChaosFleet,
    private readonly proxy: TcpProxy,
    private readonly databaseUrl: string,
    private readonly clockSlot: number | undefined,
  ) {}

  async run(fault: PlannedFault): Promise<void> {
    const random = seededRandom(fault.choiceSeed);
    try {
      switch (fault.kind) {
        case 'kill-mid-run':
          return await this.withInstance(fault, random, 'mid-run', (instance) => this.kill(instance, 'mid-run'));
        case 'kill-before-instant':
          return await this.withInstance(fault, random, 'before-instant', (instance) => this.kill(instance, 'before-instant'));
        case 'term-random':
          return await this.withInstance(fault, random, 'any', (instance) => this.terminate(instance, 'random'));
        case 'term-before-instant':
          return await this.withInstance(fault, random, 'before-instant', (instance) => this.terminate(instance, 'before-instant'));
        case 'rolling-restart':
          return await this.rollingRestart(random);
        case 'short-stall':
          return await this.withInstance(fault, random, 'mid-run', (instance) => this.stall(instance, 'short', random));
        case 'long-stall':
          return await this.withInstance(fault, random, 'mid-run', (instance) => this.stall(instance, 'long', random));
        case 'backend-kill':
          return await this.killBackends(random);
        case 'outage':
          return await this.outage(random);
        case 'clock-step':
          return await this.clockStep(random);
      }
    } catch (error) {
      this.problems.push(`${fault.kind} at ${fault.atMs} ms could not be carried out: ${String(error)}`);
    }
  }

  /**
   * Picks an instance (mid-run: one in the middle of a handler; before-instant: any, then waits
   * until 100-500 ms before a due instant), keeping at most maxDown instances down, and acts.
   */
  private async withInstance(
    fault: PlannedFault,
    random: SeededRandom,
    when: 'mid-run' | 'before-instant' | 'any',
    act: (instance: ChaosInstance) => Promise<void>,
  ): Promise<void> {
    const deadline = Date.now() + 30_000;
    let instance: ChaosInstance | undefined;
    while (Date.now() < deadline) {
      instance = this.pick(random, when === 'mid-run');
      if (instance) break;
      await sleep(50);
    }
    if (!instance) {
      this.problems.push(`${fault.kind}: no instance could be taken down (at most ${this.config.maxDown} down at once) within 30 s`);
      return;
    }
    this.busySlots.add(instance.slot);
    try {
      if (when === 'before-instant') {
        await this.untilJustBeforeAnInstant(random);
        if (!instance.healthy) {
          this.problems.push(`${fault.kind}: ${instance.nodeId} went down before its instant`);
          return;
        }
      }
      await act(instance);
    } finally {
      this.busySlots.delete(instance.slot);
    }
  }

  /** Slots down now (no healthy instance, or cut from the database) or held by a fault under way. */
  private unavailable(extra: Iterable<number> = []): number {
    const slots = new Set([...this.busySlots, ...extra]);
    for (let slot = 0; slot < this.config.instances; slot++) {
      const instance = this.fleet.currentOf(slot);
      if (!instance?.healthy || (this.cut && instance.proxied)) slots.add(slot);
    }
    return slots.size;
  }

  private pick(random: SeededRandom, midRun: boolean): ChaosInstance | undefined {
    if (this.unavailable() >= this.config.maxDown) return undefined;
    const candidates = this.fleet.healthy().filter((instance) => !this.busySlots.has(instance.slot));
    if (!midRun) return candidates.length > 0 ? random.pick(candidates) : undefined;
    const now = realNow();
    const busy = candidates.filter((instance) => [...instance.inFlight.values()].some((run) => run.startedMs + run.plannedMs - now >= 400));
    return busy.length > 0 ? random.pick(busy) : undefined;
  }

  private async untilJustBeforeAnInstant(random: SeededRandom): Promise<void> {
    const grid = random.pick(INSTANT_GRIDS);
    const instant = Math.ceil((realNow() + 700) / grid) * grid;
    await sleep(instant - random.int(100, 500) - realNow());
  }

  private async kill(instance: ChaosInstance, mode: string): Promise<void> {
    const atMs = realNow();
    await this.fleet.kill(instance);
    this.events.push({ kind: 'kill', nodeId: instance.nodeId, atMs, mode });
  }

  /** SIGTERM: the instance closes (app.close()) and exits; past the shutdown grace plus 15 s it is killed. */
  private async terminate(instance: ChaosInstance, mode: string): Promise<void> {
    const atMs = realNow();
    const result = await this.fleet.terminate(instance, LIBRARY_DEFAULTS.shutdownGraceMs + 15_000);
    this.events.push({ kind: 'term', nodeId: instance.nodeId, atMs, mode, closed: result === 'closed', exitMs: instance.exitMs });
    if (result === 'killed') {
      this.events.push({ kind: 'kill', nodeId: instance.nodeId, atMs: instance.killedMs ?? realNow(), mode: 'close timed out' });
      this.problems.push(`${instance.nodeId} did not close within ${LIBRARY_DEFAULTS.shutdownGraceMs + 15_000} ms of SIGTERM: killed`);
    }
  }

  /** Every instance in turn: SIGTERM 100-500 ms before an instant, then wait for its replacement. */
  private async rollingRestart(random: SeededRandom): Promise<void> {
    for (let slot = 0; slot < this.config.instances; slot++) {
      const deadline = Date.now() + 60_000;
      let instance = this.fleet.currentOf(slot);
      while (Date.now() < deadline && (!instance?.healthy || this.busySlots.has(slot) || this.unavailable() >= this.config.maxDown)) {
        await sleep(100);
        instance = this.fleet.currentOf(slot);
      }
      if (!instance?.healthy) {
        this.problems.push(`rolling restart: slot ${slot} had no healthy instance within 60 s`);
        continue;
      }
      this.busySlots.add(slot);
      try {
        await this.untilJustBeforeAnInstant(random);
        await this.terminate(instance, 'rolling');
        const replacement = this.fleet.currentOf(slot);
        if (replacement) await untilReady([replacement], 60_000).catch(() => undefined);
      } finally {
        this.busySlots.delete(slot);
      }
    }
  }

  /**
   * SIGSTOP then SIGCONT. Short: a little longer than the lease (the owner wakes before any
   * take-over scan, to a lost lease). Long: until no lease of the instance is RUNNING any more
   * (taken over, or finished), at least a lease and at most a lease plus a scan period plus 5 s.
   */
  private async stall(instance: ChaosInstance, mode: 'short' | 'long', random: SeededRandom): Promise<void> {
    this.fleet.pause(instance);
    const fromMs = realNow();
    if (mode === 'short') {
      await sleep(LEASE_MS + random.int(1_000, 3_000));
    } else {
      await sleep(LEASE_MS + 1_000);
      const bound = fromMs + DYNAMIC_LEASE_MS + LIBRARY_DEFAULTS.takeOverScanMs + 5_000;
      while (realNow() < bound) {
        const rows = await tryAdminQuery<{ held: number }>(
          this.databaseUrl,
          `SELECT count(*)::int AS held FROM "job-scheduler" WHERE "ownerId" = $1 AND "status" = 'RUNNING'`,
          [instance.nodeId],
        );
        if (rows?.[0]?.held === 0) break;
        await sleep(500);
      }
    }
    this.fleet.resume(instance);
    this.events.push({ kind: 'stop', nodeId: instance.nodeId, fromMs, toMs: realNow(), mode });
    // Give it a moment to wake before another fault may pick it.
    await sleep(1_000);
  }

  /** pg_terminate_backend on a few connections of the instances' pools (never the recorders'). */
  private async killBackends(random: SeededRandom): Promise<void> {
    const rows = await tryAdminQuery<{ pid: number; application_name: string }>(
      this.databaseUrl,
      `SELECT pid, application_name FROM pg_stat_activity WHERE application_name ~ '^sched-chaos-i[0-9]' ORDER BY pid`,
    );
    if (!rows || rows.length === 0) {
      this.problems.push('backend kill: no instance connection found');
      return;
    }
    const pool = [...rows];
    const chosen: typeof rows = [];
    while (chosen.length < this.config.backendKillsPerBurst && pool.length > 0) chosen.push(...pool.splice(random.int(0, pool.length - 1), 1));
    const atMs = realNow();
    const [result] =
      (await tryAdminQuery<{ terminated: number }>(
        this.databaseUrl,
        `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS terminated FROM unnest($1::int[]) AS pid`,
        [chosen.map((row) => row.pid)],
      )) ?? [];
    const nodeIds = [...new Set(chosen.map((row) => row.application_name.replace(/^sched-chaos-/, '')))];
    this.events.push({ kind: 'backend-kill', atMs, nodeIds, terminated: result?.terminated ?? 0 });
  }

  /** The proxy in front of the proxied instances' pools drops every connection and refuses new ones for a while. */
  private async outage(random: SeededRandom): Promise<void> {
    const durationMs = random.int(this.config.outageMinMs, this.config.outageMaxMs);
    const proxiedSlots = this.fleet
      .live()
      .filter((instance) => instance.proxied)
      .map((instance) => instance.slot);
    const wait = Date.now() + 30_000;
    while (this.unavailable(proxiedSlots) > this.config.maxDown && Date.now() < wait) await sleep(100);
    if (this.unavailable(proxiedSlots) > this.config.maxDown) {
      this.problems.push(`outage: the proxied instances could not be cut (at most ${this.config.maxDown} down at once) within 30 s`);
      return;
    }
    const fromMs = realNow();
    const nodeIds = new Set(
      this.fleet
        .live()
        .filter((instance) => instance.proxied)
        .map((instance) => instance.nodeId),
    );
    this.cut = true;
    this.proxy.cut();
    const deadline = fromMs + durationMs;
    // Instances that boot during the outage are cut too.
    while (realNow() < deadline) {
      for (const instance of this.fleet.live()) if (instance.proxied) nodeIds.add(instance.nodeId);
      await sleep(Math.min(200, deadline - realNow()));
    }
    this.proxy.restore();
    this.cut = false;
    this.events.push({ kind: 'outage', nodeIds: [...nodeIds], fromMs, toMs: realNow() });
  }

  /** The clock-stepped instance's wall clock jumps forward, then back 10-20 s later (libfaketime). */
  private async clockStep(random: SeededRandom): Promise<void> {
    if (this.clockSlot === undefined) {
      this.problems.push('clock step: no instance runs under libfaketime');
      return;
    }
    // Up to a minute: the slot may be stopped (a long stall lasts up to ~45 s) or booting on a loaded machine.
    const deadline = Date.now() + 60_000;
    let instance = this.fleet.currentOf(this.clockSlot);
    while (Date.now() < deadline && !instance?.healthy) {
      await sleep(100);
      instance = this.fleet.currentOf(this.clockSlot);
    }
    if (!instance?.healthy) {
      this.problems.push(`clock step: slot ${this.clockSlot} had no healthy instance within 60 s`);
      return;
    }
    const offsetMs = this.config.clockStepMs;
    instance.setClockOffset(offsetMs);
    // libfaketime reads its file at most a second later.
    this.events.push({ kind: 'clock-step', nodeId: instance.nodeId, atMs: realNow(), offsetMs });
    await sleep(random.int(10_000, 20_000));
    if (!instance.alive) return;
    instance.setClockOffset(0);
    this.events.push({ kind: 'clock-step', nodeId: instance.nodeId, atMs: realNow(), offsetMs: -offsetMs });
  }
}
