import type { RestartablePostgres } from '../support/restartable-postgres';
import { sleep, tryAdminQuery } from './chaos.admin';
import type { ChaosConfig } from './chaos.config';
import type { ChaosFleet, ChaosWorker } from './chaos.fleet';
import type { PlannedFault } from './chaos.plan';
import { seededRandom, type SeededRandom } from './chaos.random';

export interface HeldRunRecord {
  key: string;
  fencingToken: number;
  /** Another worker took the run over (a higher fencing token) while this one was stopped. */
  reclaimedWhilePaused: boolean;
}

export interface KillRecord {
  nodeId: string;
  atMs: number;
  heldRuns: number;
}

export interface PauseRecord {
  nodeId: string;
  atMs: number;
  pausedMs: number;
  held: HeldRunRecord[];
}

export interface FaultRecords {
  kills: KillRecord[];
  pauses: PauseRecord[];
  backendKills: number;
  restarts: number;
  /** Faults that could not be carried out as planned: the run proves less than it claims. */
  problems: string[];
}

export const emptyFaultRecords = (): FaultRecords => ({ kills: [], pauses: [], backendKills: 0, restarts: 0, problems: [] });

/** Carries out planned faults against the fleet and the run's own server. */
export class ChaosFaults {
  readonly records = emptyFaultRecords();
  /** Pauses and the restart, one at a time (see `serially`). */
  private exclusive: Promise<void> = Promise.resolve();

  constructor(
    private readonly config: ChaosConfig,
    private readonly fleet: ChaosFleet,
    private readonly server: RestartablePostgres,
    private readonly databaseUrl: string,
    private readonly startedAt: number,
  ) {}

  async run(fault: PlannedFault): Promise<void> {
    const random = seededRandom(fault.choiceSeed);
    switch (fault.kind) {
      case 'kill':
        return this.kill(random);
      case 'pause':
        return this.serially(() => this.pause(random));
      case 'backend-kill':
        return this.killBackends(random);
      case 'restart':
        return this.serially(() => this.restart());
    }
  }

  /**
   * A paused owner must wake up to the connections it had, so that what it learns on waking is
   * about its lease alone: no restart while a worker is stopped (backend kills spare it too).
   * A connection that died meanwhile would make it report a database error instead, rightly:
   * it cannot then prove that it lost the lease.
   */
  private serially(task: () => Promise<void>): Promise<void> {
    const run = this.exclusive.then(task);
    this.exclusive = run.catch(() => undefined);
    return run;
  }

  /** Stopped workers, and those resumed too recently to have settled their stale runs. */
  private spared(worker: ChaosWorker): boolean {
    return worker.paused || Date.now() - worker.resumedAt <= this.config.leaseMs * 2;
  }

  /**
   * A worker in the middle of a run: preferably one with a callback that still has a good part of
   * its work ahead, so that the fault lands mid-run rather than on a run about to complete.
   */
  private async midRunWorker(random: SeededRandom): Promise<ChaosWorker | undefined> {
    const deadline = Date.now() + 5_000;
    const minimumLeftMs = Math.min(150, this.config.workMaxMs / 3);
    // Not a worker stopped or just resumed: its stale runs must be seen to end (pause checks).
    const eligible = (): ChaosWorker[] => this.fleet.live().filter((worker) => worker.ready && !worker.killed && !this.spared(worker));
    while (Date.now() < deadline) {
      const now = Date.now();
      const busy = eligible().filter((worker) => [...worker.inFlight.values()].some((run) => run.startedAt + run.workMs - now >= minimumLeftMs));
      if (busy.length > 0) return random.pick(busy);
      await sleep(10);
    }
    const fallback = eligible().filter((worker) => worker.inFlight.size > 0);
    return fallback.length > 0 ? random.pick(fallback) : undefined;
  }

  private async kill(random: SeededRandom): Promise<void> {
    const worker = await this.midRunWorker(random);
    if (!worker) {
      this.records.problems.push('kill: no worker had a run in progress');
      return;
    }
    const record: KillRecord = { nodeId: worker.nodeId, atMs: Date.now() - this.startedAt, heldRuns: worker.inFlight.size };
    await this.fleet.kill(worker);
    this.records.kills.push(record);
  }

  /**
   * SIGSTOP for longer than the lease, and until every run the worker held has been taken over by
   * another (bounded), then SIGCONT: the stopped owner must then find its lease lost.
   */
  private async pause(random: SeededRandom): Promise<void> {
    const worker = await this.midRunWorker(random);
    if (!worker) {
      this.records.problems.push('pause: no worker had a run in progress');
      return;
    }
    const held = [...worker.inFlight.entries()].map(([key, run]) => ({ key, fencingToken: run.fencingToken }));
    const pausedAt = Date.now();
    this.fleet.pause(worker);
    await sleep(this.config.leaseMs + this.config.heartbeatMs);
    const deadline = pausedAt + this.config.leaseMs * 4 + 10_000;
    const reclaimed = new Set<string>();
    while (Date.now() < deadline) {
      const rows = await tryAdminQuery<{ lockKey: string; fencingToken: number; status: string }>(
        this.databaseUrl,
        `SELECT "lockKey", "fencingToken"::int AS "fencingToken", "status" FROM "job-scheduler" WHERE "lockKey" = ANY($1)`,
        [held.map((run) => run.key)],
      );
      let settled = 0;
      for (const run of held) {
        const row = rows?.find((candidate) => candidate.lockKey === run.key);
        if (!row) continue;
        if (row.fencingToken > run.fencingToken) reclaimed.add(run.key);
        // Finished by this very owner just before the stop landed: nothing to take over.
        if (row.fencingToken > run.fencingToken || row.status !== 'RUNNING') settled++;
      }
      if (rows && settled === held.length) break;
      await sleep(100);
    }
    this.fleet.resume(worker);
    const pausedMs = Date.now() - pausedAt;
    // Until its stale runs have ended, the woken owner keeps the restart waiting (`serially`).
    const settleBy = Date.now() + this.config.leaseMs * 2 + 5_000;
    const stale = () => held.some((run) => worker.inFlight.get(run.key)?.fencingToken === run.fencingToken);
    while (worker.alive && stale() && Date.now() < settleBy) await sleep(20);
    this.records.pauses.push({
      nodeId: worker.nodeId,
      atMs: pausedAt - this.startedAt,
      pausedMs,
      held: held.map((run) => ({ ...run, reclaimedWhilePaused: reclaimed.has(run.key) })),
    });
  }

  /** pg_terminate_backend on a few of the workers' connections, chosen by the seed. */
  private async killBackends(random: SeededRandom): Promise<void> {
    const spared = this.fleet.all.filter((worker) => worker.alive && this.spared(worker)).map((worker) => `chaos-worker-${worker.nodeId}`);
    const rows = await tryAdminQuery<{ pid: number }>(
      this.databaseUrl,
      `SELECT pid FROM pg_stat_activity
       WHERE application_name LIKE 'chaos-worker-%' AND NOT (application_name = ANY($1::text[]))
       ORDER BY pid`,
      [spared],
    );
    if (!rows || rows.length === 0) return;
    const pool = rows.map((row) => row.pid);
    const chosen: number[] = [];
    while (chosen.length < this.config.backendKillsPerBurst && pool.length > 0) {
      chosen.push(...pool.splice(random.int(0, pool.length - 1), 1));
    }
    const [result] =
      (await tryAdminQuery<{ terminated: number }>(
        this.databaseUrl,
        `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS terminated FROM unnest($1::int[]) AS pid`,
        [chosen],
      )) ?? [];
    this.records.backendKills += result?.terminated ?? 0;
  }

  /** The run's own server: fast shutdown, down for a while, started again on the same data. */
  private async restart(): Promise<void> {
    await this.server.stop();
    await sleep(this.config.restartDownMs);
    await this.server.start();
    this.records.restarts++;
  }
}
