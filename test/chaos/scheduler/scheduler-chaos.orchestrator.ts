import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DynamicSchedules, DynamicSchedulesModule, JobScheduler, JobSchedulerMigrations, JobSchedulerModule } from '../../../src/features';
import { onProcessExit, realNow, sleep } from '../../support/fleet';
import { startEmbeddedPostgres } from '../../support/postgres-server';
import { TcpProxy } from '../../support/tcp-proxy';
import { withDatabase } from '../../support/test-database';
import { adminQuery, tryAdminQuery } from '../chaos.admin';
import { DYNAMIC_HANDLER, DYNAMIC_LEASE_MS, DYNAMIC_SCHEDULES, type DynamicScheduleSpec, occurrenceId } from './scheduler-chaos.catalogue';
import type { SchedulerChaosConfig } from './scheduler-chaos.config';
import { REPOSITORY_NODE_MODULES, transpileInstanceSources } from './scheduler-chaos.build';
import { CHAOS_CODES, collectLeaseRows, collectRuns, instanceLives } from './scheduler-chaos.evidence';
import { planFaults, SchedulerChaosFaults } from './scheduler-chaos.faults';
import { ChaosFleet, findLibfaketime } from './scheduler-chaos.fleet';
import { DynamicRunHandler } from './scheduler-chaos.jobs';
import { CHAOS_RUNS_TABLE } from './scheduler-chaos.protocol';
import { RunRecorder } from './scheduler-chaos.recorder';
import type { SchedulerChaosReport } from './scheduler-chaos.report';
import { buildReport } from './scheduler-chaos.report';
import { expectedOccurrences, judge, type ScheduleChange, type VerdictInput } from './scheduler-chaos.verdict';

export interface SchedulerChaosRunOptions {
  log: (line: string) => void;
  command: string;
  keep: boolean;
}

export interface SchedulerChaosOutcome {
  report: SchedulerChaosReport;
  /** Kept when asked to, or when a check failed: journals, outputs, rows, the verdict of every occurrence. */
  runDirectory?: string;
}

interface ChaosDatabase {
  url: string;
  /** On the server DATABASE_URL names, or on an embedded server of the run's own. */
  kind: 'DATABASE_URL' | 'embedded';
  name: string;
  drop(): Promise<void>;
}

/**
 * A database of the run's own: on the server DATABASE_URL names (created, then dropped), else on
 * an embedded PostgreSQL started here (as CI runs, with DATABASE_URL unset).
 */
const createDatabase = async (log: (line: string) => void): Promise<ChaosDatabase> => {
  const name = `sched_chaos_${randomBytes(4).toString('hex')}`;
  const external = process.env.DATABASE_URL;
  if (external) {
    await adminQuery(external, `CREATE DATABASE "${name}"`);
    return {
      url: withDatabase(external, name),
      kind: 'DATABASE_URL',
      name,
      drop: async () => void (await adminQuery(external, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
    };
  }
  log('DATABASE_URL is unset: starting an embedded PostgreSQL');
  const server = await startEmbeddedPostgres({ settings: { max_connections: 300 } });
  await adminQuery(server.url, `CREATE DATABASE "${name}"`);
  return { url: withDatabase(server.url, name), kind: 'embedded', name, drop: () => server.stop() };
};

const prepareTables = async (url: string): Promise<void> => {
  const dataSource = new DataSource({ type: 'postgres', url, entities: [JobScheduler], migrations: [...JobSchedulerMigrations], poolSize: 1 });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
    await dataSource.query(CHAOS_RUNS_TABLE);
  } finally {
    await dataSource.destroy();
  }
};

/**
 * The operators' side: an application with DynamicSchedulesModule `start: false` (an API process:
 * it reads and writes schedules, runs nothing), through which the run creates and removes its
 * dynamic schedules, as a controller would.
 */
const startAdminApp = async (url: string): Promise<{ app: INestApplicationContext; schedules: DynamicSchedules }> => {
  @Module({
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url, entities: [JobScheduler], poolSize: 2, applicationName: 'sched-chaos-admin' }),
      JobSchedulerModule.forRoot({ nodeId: 'admin' }),
      DynamicSchedulesModule.forRoot({ start: false, retention: false, metrics: false }),
    ],
    providers: [{ provide: RunRecorder, useValue: {} }, DynamicRunHandler],
  })
  class AdminModule {}
  const app = await NestFactory.createApplicationContext(AdminModule, { logger: ['error', 'warn'] });
  return { app, schedules: app.get(DynamicSchedules) };
};

const upsertSchedule = (schedules: DynamicSchedules, spec: DynamicScheduleSpec) =>
  schedules.upsert({
    id: spec.id,
    handler: DYNAMIC_HANDLER,
    every: spec.everyMs,
    leaseMs: DYNAMIC_LEASE_MS,
    data: { spec: spec.id },
    ...(spec.tenantId === undefined ? {} : { tenantId: spec.tenantId }),
  });

/**
 * One scheduler chaos run: a database of its own, an API process for the dynamic schedules, a
 * fleet of instance processes (some behind a TCP proxy, one under libfaketime), the seeded faults
 * over the window, a settling time for take-overs, then the verdict. Every process it started is
 * gone when it returns or throws.
 */
export const runSchedulerChaos = async (config: SchedulerChaosConfig, options: SchedulerChaosRunOptions): Promise<SchedulerChaosOutcome> => {
  const began = performance.now();
  const { log } = options;
  const runDirectory = await mkdtemp(join(tmpdir(), 'sdcorejs-sched-chaos-'));
  let keep = options.keep;
  let fleet: ChaosFleet | undefined;
  const forgetExitHandler = onProcessExit(() => fleet?.killAll());
  const database = await createDatabase(log);
  let proxy: TcpProxy | undefined;
  let admin: { app: INestApplicationContext; schedules: DynamicSchedules } | undefined;
  try {
    await prepareTables(database.url);
    admin = await startAdminApp(database.url);
    const scheduleChanges: ScheduleChange[] = [];
    for (const spec of DYNAMIC_SCHEDULES.filter((candidate) => candidate.addedAt === undefined)) await upsertSchedule(admin.schedules, spec);

    proxy = TcpProxy.forUrl(database.url);
    const proxiedUrl = await proxy.start(database.url);
    const libfaketime = config.clockSteps > 0 ? findLibfaketime() : undefined;
    const slots = Array.from({ length: config.instances }, (_, slot) => slot);
    const proxiedSlots = new Set(slots.slice(0, config.proxiedInstances));
    const clockSlot = libfaketime ? config.instances - 1 : undefined;
    const problems: string[] = [];
    if (config.clockSteps > 0 && !libfaketime)
      problems.push("clock step: Debian's faketime (libfaketime) is not installed; run with --no-clock-step or install it");

    const entry = await transpileInstanceSources(join(runDirectory, 'build'));
    fleet = new ChaosFleet({
      entry: { file: entry, nodePath: REPOSITORY_NODE_MODULES },
      instances: config.instances,
      seed: config.seed,
      runDirectory,
      directUrl: database.url,
      proxiedUrl,
      proxiedSlots,
      clockSlot,
      libfaketime,
    });
    log(
      `database ${database.name} (on ${database.kind === 'DATABASE_URL' ? 'the server DATABASE_URL names' : 'an embedded server'}); starting ${config.instances} instances (${proxiedSlots.size} behind the proxy${clockSlot === undefined ? '' : `, i${clockSlot} under libfaketime`})`,
    );
    await fleet.start(120_000);

    const windowFromMs = realNow() + config.startMarginMs;
    const windowToMs = windowFromMs + config.windowMs;
    const plan = planFaults(config);
    log(`instances ready; window of ${config.windowMs / 1_000} s, ${plan.length} faults planned`);
    const faults = new SchedulerChaosFaults(config, fleet, proxy, database.url, clockSlot);
    const faultRuns = plan.map(async (fault) => {
      await sleep(windowFromMs + fault.atMs - realNow());
      log(`fault: ${fault.kind}`);
      await faults.run(fault);
    });
    const changeRuns = DYNAMIC_SCHEDULES.flatMap((spec) => {
      const changes: Promise<void>[] = [];
      const schedules = admin?.schedules as DynamicSchedules;
      if (spec.addedAt !== undefined) {
        changes.push(
          sleep(windowFromMs + spec.addedAt * config.windowMs - realNow()).then(async () => {
            const sentMs = realNow();
            await upsertSchedule(schedules, spec);
            scheduleChanges.push({ scheduleId: spec.id, change: 'added', sentMs, doneMs: realNow() });
            log(`schedule ${spec.id} added`);
          }),
        );
      }
      if (spec.removedAt !== undefined) {
        changes.push(
          sleep(windowFromMs + spec.removedAt * config.windowMs - realNow()).then(async () => {
            const sentMs = realNow();
            await schedules.remove(spec.id);
            scheduleChanges.push({ scheduleId: spec.id, change: 'removed', sentMs, doneMs: realNow() });
            log(`schedule ${spec.id} removed`);
          }),
        );
      }
      return changes;
    });
    await Promise.all([...faultRuns, ...changeRuns]);
    await sleep(windowToMs - realNow());
    log('window over; waiting for take-overs to settle');

    // Settled: no occurrence due in the window is RUNNING, and no handler of one is under way.
    const due = new Set(expectedOccurrences({ windowFromMs, windowToMs, scheduleChanges }).due.map(occurrenceId));
    const settleBy = windowToMs + config.settleMaxMs;
    let settled = false;
    while (realNow() < settleBy) {
      const running = await tryAdminQuery<{ code: string; runKey: string }>(
        database.url,
        `SELECT "code", "runKey" FROM "job-scheduler" WHERE "status" = 'RUNNING' AND "code" = ANY($1)`,
        [CHAOS_CODES],
      );
      const busy = fleet.live().some((instance) => [...instance.inFlight.values()].some((run) => due.has(occurrenceId(run))));
      // A removed schedule's occurrence whose holder died stays RUNNING: nobody takes it over.
      const removed = scheduleChanges.filter((change) => change.change === 'removed').map((change) => `schedule=${encodeURIComponent(change.scheduleId)} `);
      const waiting = (running ?? []).filter((row) => due.has(occurrenceId(row)) && !removed.some((prefix) => row.runKey.startsWith(prefix)));
      if (running && !busy && waiting.length === 0) {
        settled = true;
        break;
      }
      await sleep(1_000);
    }
    log(settled ? 'settled; stopping the instances' : `not settled within ${config.settleMaxMs / 1_000} s; stopping the instances`);
    await fleet.stopAll(25_000);
    const crashed = fleet.all.filter((instance) => instance.crashed);
    for (const instance of crashed)
      problems.push(`instance ${instance.nodeId} crashed (exit ${instance.exit?.code ?? instance.exit?.signal}):\n${instance.outputTail(3_000)}`);

    const collectedMs = realNow();
    const input: VerdictInput = {
      windowFromMs,
      windowToMs,
      collectedMs,
      runs: await collectRuns(database.url, fleet),
      rows: await collectLeaseRows(database.url),
      instances: instanceLives(fleet),
      faults: faults.events,
      scheduleChanges,
    };
    const verdict = judge(input);
    const report = buildReport({
      config,
      command: options.command,
      durationSeconds: (performance.now() - began) / 1_000,
      database: database.kind,
      verdict,
      faults: faults.events,
      problems: [...problems, ...faults.problems],
      instances: fleet.all.length,
      settled,
    });
    if (!report.ok) keep = true;
    if (keep) {
      await writeFile(join(runDirectory, 'evidence.json'), `${JSON.stringify(input, null, 1)}\n`);
      await writeFile(join(runDirectory, 'occurrences.json'), `${JSON.stringify(verdict.occurrences, null, 1)}\n`);
      await writeFile(join(runDirectory, 'report.json'), `${JSON.stringify(report, null, 1)}\n`);
    }
    return { report, ...(keep ? { runDirectory } : {}) };
  } catch (error) {
    keep = true;
    throw error;
  } finally {
    fleet?.killAll();
    forgetExitHandler();
    await admin?.app.close().catch(() => undefined);
    await proxy?.close().catch(() => undefined);
    if (options.keep && database.kind === 'DATABASE_URL') log(`database ${database.name} kept`);
    else await database.drop().catch((error: unknown) => log(`could not drop ${database.name}: ${String(error)}`));
    if (!keep) await rm(runDirectory, { recursive: true, force: true });
  }
};
