import type { DataSource } from 'typeorm';
import { workFor } from '../support/abortable-work';
import type { JobExecutionLease, JobSchedulerService } from '../../src/features';
import type { ChaosEventLog } from './chaos.event-log';
import { type ChaosWorkerSettings, resourceOf, type RunPlan, runKeyOf, runPlanOf, summarizeError, type WorkerMessage } from './chaos.protocol';
import { FENCED_WRITE, INSERT_EFFECT, SWEEP_RUNS } from './chaos.schema';

/** The error a callback throws on purpose, so that its run is recorded FAIL and taken over. */
export class ChaosPlannedFailure extends Error {
  constructor(resource: string) {
    super(`planned failure of the first attempt of ${resource}`);
    this.name = 'ChaosPlannedFailure';
  }
}

const reasonName = (signal: AbortSignal | undefined): string | undefined => {
  if (!signal?.aborted) return undefined;
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason.name : typeof reason;
};

interface SweepRow {
  code: string;
  runKey: string;
  takeover: boolean;
}

/**
 * One competing node: on every tick it tries every code's run with runExclusive; a sweeper takes
 * over runs left FAIL or expired by others and ticks nobody could start. Each run works for its
 * planned time, then performs its two side effects. Every error of the library is caught and
 * logged as an event: a worker must outlive a lost connection or a restarted server.
 */
export class ChaosWorkerNode {
  private lastTick = -1;
  private stopping = false;
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  private readonly tickOfRunKey = new Map<string, number>();
  /** When each tick was announced to this worker (monotonic clock: this one is never skewed). */
  private readonly announcedAt = new Map<number, number>();

  constructor(
    private readonly settings: ChaosWorkerSettings,
    private readonly jobs: JobSchedulerService,
    private readonly dataSource: DataSource,
    private readonly events: ChaosEventLog,
    private readonly send: (message: WorkerMessage) => void,
  ) {
    for (let tick = 0; tick < settings.ticks; tick++) this.tickOfRunKey.set(runKeyOf(tick), tick);
  }

  start(): void {
    this.scheduleSweep();
  }

  onTick(index: number): void {
    if (this.stopping) return;
    this.lastTick = Math.max(this.lastTick, index);
    this.announcedAt.set(index, performance.now());
    for (const code of this.settings.codes) this.fire(code, index);
  }

  /** Stops taking work and waits (a bounded time) for runs already under way. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.sweepTimer);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.running]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, 5_000);
      }),
    ]);
    clearTimeout(timer);
  }

  private scheduleSweep(): void {
    if (this.stopping) return;
    this.sweepTimer = setTimeout(() => void this.sweep(), this.settings.sweepMs);
  }

  private async sweep(): Promise<void> {
    try {
      const rows = (await this.dataSource.query(SWEEP_RUNS)) as SweepRow[];
      const known = new Set<string>();
      for (const row of rows) {
        known.add(resourceOf(row.code, row.runKey));
        const tick = this.tickOfRunKey.get(row.runKey);
        if (row.takeover && tick !== undefined) this.fire(row.code, tick);
      }
      // Ticks that nobody could even start (the database was down), once their own attempts
      // have had a sweep interval; ticks this worker was not told of (it joined later) at once.
      for (let tick = 0; tick <= this.lastTick; tick++) {
        const announced = this.announcedAt.get(tick);
        if (announced !== undefined && performance.now() - announced < this.settings.sweepMs) continue;
        for (const code of this.settings.codes) {
          if (!known.has(resourceOf(code, runKeyOf(tick)))) this.fire(code, tick);
        }
      }
    } catch (error) {
      this.events.write({ type: 'sweep-error', error: summarizeError(error) });
    } finally {
      this.scheduleSweep();
    }
  }

  private fire(code: string, tick: number): void {
    if (this.stopping) return;
    const resource = resourceOf(code, runKeyOf(tick));
    if (this.inFlight.has(resource)) return;
    this.inFlight.add(resource);
    const attempt = this.attempt(code, tick, resource).finally(() => {
      this.inFlight.delete(resource);
      this.running.delete(attempt);
    });
    this.running.add(attempt);
  }

  private async attempt(code: string, tick: number, resource: string): Promise<void> {
    const { leaseMs, heartbeatMs } = this.settings;
    let owned: { key: string; fencingToken: number; signal: AbortSignal } | undefined;
    try {
      const outcome = await this.jobs.runExclusive({ code, runKey: runKeyOf(tick), name: `chaos ${code}`, leaseMs, heartbeatMs }, async (lease) => {
        owned = { key: lease.idempotencyKey, fencingToken: lease.fencingToken, signal: lease.signal };
        const plan = runPlanOf(this.settings, code, tick, lease.attempt);
        this.events.write({ type: 'start', key: lease.idempotencyKey, code, tick, fencingToken: lease.fencingToken, attempt: lease.attempt });
        this.send({ type: 'run-start', key: lease.idempotencyKey, fencingToken: lease.fencingToken, workMs: plan.workMs });
        await this.perform(lease, resource, plan);
      });
      if (outcome.acquired && owned) this.events.write({ type: 'success', key: owned.key, fencingToken: owned.fencingToken });
    } catch (error) {
      this.events.write({
        type: 'error',
        key: owned?.key ?? resource,
        owned: owned !== undefined,
        ...(owned ? { fencingToken: owned.fencingToken } : {}),
        error: summarizeError(error),
        signalAborted: owned?.signal.aborted ?? false,
        signalReason: reasonName(owned?.signal),
      });
    } finally {
      if (owned) this.send({ type: 'run-end', key: owned.key, fencingToken: owned.fencingToken });
    }
  }

  /** The work, then the two side effects as the README describes them. */
  private async perform(lease: JobExecutionLease, resource: string, plan: RunPlan): Promise<void> {
    await workFor(plan.workMs, lease.signal);
    if (plan.fails) throw new ChaosPlannedFailure(resource);
    const { idempotencyKey: key, fencingToken } = lease;
    const inserted = (await this.dataSource.query(INSERT_EFFECT, [key, resource, fencingToken, this.settings.nodeId])) as unknown[];
    this.events.write({ type: 'effect', key, fencingToken, inserted: inserted.length === 1 });
    lease.signal.throwIfAborted();
    const written = (await this.dataSource.query(FENCED_WRITE, [resource, fencingToken, this.settings.nodeId, key])) as unknown[];
    this.events.write({ type: 'fence', key, fencingToken, accepted: written.length === 1 });
  }
}
