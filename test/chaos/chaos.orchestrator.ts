import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { JobScheduler, JobSchedulerMigrations } from '../../src/features';
import { onProcessExit } from '../support/fleet';
import { startRestartablePostgres } from '../support/restartable-postgres';
import { withDatabase } from '../support/test-database';
import { adminQuery, sleep, tryAdminQuery } from './chaos.admin';
import type { ChaosConfig } from './chaos.config';
import { collectEvidence } from './chaos.evidence';
import { ChaosFaults } from './chaos.faults';
import { ChaosFleet } from './chaos.fleet';
import { planChaos } from './chaos.plan';
import { resourceOf, runKeyOf } from './chaos.protocol';
import { type ChaosReport, computeFigures, reportRows } from './chaos.report';
import { CHAOS_TABLES, SEED_RESOURCES } from './chaos.schema';

export interface ChaosRunOptions {
  /** Progress lines (stderr in the CLI). */
  log: (line: string) => void;
  /** The command that replays this run, printed with the table. */
  command: string;
  /** Keep the run directory even when every check passes. */
  keep: boolean;
}

export interface ChaosOutcome {
  report: ChaosReport;
  /** Kept when asked to, or when a check failed: events and output of every worker. */
  runDirectory?: string;
}

const prepareDatabase = async (url: string, config: ChaosConfig): Promise<void> => {
  const dataSource = new DataSource({ type: 'postgres', url, entities: [JobScheduler], migrations: [...JobSchedulerMigrations], poolSize: 1 });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
  } finally {
    await dataSource.destroy();
  }
  await adminQuery(url, CHAOS_TABLES);
  const resources = config.codes.flatMap((code) => Array.from({ length: config.ticks }, (_, tick) => resourceOf(code, runKeyOf(tick))));
  await adminQuery(url, SEED_RESOURCES, [resources]);
};

/** Waits until every logical run is SUCCESS, or the time is up. */
const untilFinished = async (url: string, runs: number, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [row] = (await tryAdminQuery<{ done: number }>(url, `SELECT count(*)::int AS done FROM "job-scheduler" WHERE "status" = 'SUCCESS'`)) ?? [];
    if (row?.done === runs) return;
    await sleep(200);
  }
};

/** Waits until no callback is under way anywhere (stale owners included), or the time is up. */
const untilQuiet = async (fleet: ChaosFleet, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (fleet.inFlightCount() > 0 && Date.now() < deadline) await sleep(50);
};

/**
 * One chaos run: its own PostgreSQL, a fleet of worker processes racing for every tick's runs,
 * the seeded faults, then the checks. Every process it started is gone when it returns or throws.
 */
export const runChaos = async (config: ChaosConfig, options: ChaosRunOptions): Promise<ChaosOutcome> => {
  const began = performance.now();
  const { log } = options;
  const plan = planChaos(config);
  const runDirectory = await mkdtemp(join(tmpdir(), 'sdcorejs-chaos-'));
  let keep = options.keep;
  let fleet: ChaosFleet | undefined;
  const forgetExitHandler = onProcessExit(() => fleet?.killAll());
  const server = await startRestartablePostgres();
  try {
    await adminQuery(server.url, 'CREATE DATABASE chaos');
    const url = withDatabase(server.url, 'chaos');
    await prepareDatabase(url, config);
    log(`PostgreSQL of its own on port ${server.port}; starting ${config.workers} worker processes`);

    fleet = new ChaosFleet(config, runDirectory, url, plan.skewedSlot);
    await fleet.start(120_000);
    log(`workers ready; ${config.ticks} ticks every ${config.tickMs} ms, ${plan.faults.length} faults planned`);

    const startedAt = Date.now();
    const faults = new ChaosFaults(config, fleet, server, url, startedAt);
    const faultRuns = plan.faults.map(async (fault) => {
      await sleep(startedAt + fault.atMs - Date.now());
      try {
        await faults.run(fault);
      } catch (error) {
        faults.records.problems.push(`${fault.kind} at ${fault.atMs} ms could not be carried out: ${String(error)}`);
      }
    });
    for (let tick = 0; tick < config.ticks; tick++) {
      fleet.tick(tick);
      await sleep(startedAt + (tick + 1) * config.tickMs - Date.now());
    }
    await Promise.all(faultRuns);
    log('ticks and faults over; waiting for every run to finish');

    const logicalRuns = config.codes.length * config.ticks;
    await untilFinished(url, logicalRuns, config.finishTimeoutMs);
    await untilQuiet(fleet, 10_000);
    await fleet.stop(15_000);

    const evidence = await collectEvidence(url, fleet);
    const { figures, problems } = computeFigures(config, evidence, faults.records);
    const rows = reportRows(config, figures);
    const ok = rows.every((row) => row.ok) && faults.records.problems.length === 0;
    if (!ok) keep = true;
    const report: ChaosReport = {
      seed: config.seed,
      preset: config.preset,
      command: options.command,
      durationSeconds: (performance.now() - began) / 1000,
      config,
      figures,
      rows,
      ok,
      problems,
    };
    return { report, ...(keep ? { runDirectory } : {}) };
  } catch (error) {
    keep = true;
    throw error;
  } finally {
    fleet?.killAll();
    forgetExitHandler();
    await server.destroy().catch(() => undefined);
    if (!keep) await rm(runDirectory, { recursive: true, force: true });
  }
};
