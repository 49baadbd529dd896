import { chownSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { JobScheduler, JobSchedulerMigrations } from '../../src/features';
import { adminQuery, sleep } from '../chaos/chaos.admin';
import { killEverythingUnder, onProcessExit } from '../support/fleet';
import { computeFailoverFigures, type FinalRow } from './failover.checks';
import { FailoverCluster } from './failover.cluster';
import { allPorts, clusterPorts } from './failover.cluster-config';
import { type FailoverConfig, type FailoverMode, modePortBase } from './failover.config';
import { readFailoverEvents } from './failover.event-log';
import { FailoverFaults, type FaultRecord } from './failover.faults';
import { FailoverFleet } from './failover.fleet';
import { resolveRunAs } from './failover.processes';
import { alignTick, runKeyOf, tickInstants } from './failover.protocol';
import { readReplication, replicationProblems } from './failover.replication';
import { type FailoverReport, reportRows, violationsOf } from './failover.report';
import { countTokenOccurrences, mergeLeakCounts } from './failover.token-leaks';
import type { FailoverTools } from './failover.tools';

export interface FailoverRunOptions {
  log: (line: string) => void;
  command: string;
  tree: string;
}

export interface FailoverOutcome {
  report: FailoverReport;
  /** Kept when asked to, or when the run failed: cluster logs and node events. */
  runDir?: string;
}

const CODE = 'failover-proof';

const portIsFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

const migrate = async (url: string): Promise<void> => {
  const dataSource = new DataSource({ type: 'postgres', url, entities: [JobScheduler], migrations: [...JobSchedulerMigrations], poolSize: 1 });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
  } finally {
    await dataSource.destroy();
  }
};

/** The final lease table, through HAProxy (a few tries: the proxy may still be settling). */
const readFinalRows = async (url: string): Promise<FinalRow[]> => {
  for (let attempt = 1; ; attempt++) {
    try {
      const rows = await adminQuery<{ runKey: string; id: string; status: string; fencingToken: string; attempts: number; ownerId: string | null }>(
        url,
        `SELECT "id"::text AS "id", "runKey", "status"::text AS "status", "fencingToken"::text AS "fencingToken", "attempts", "ownerId"
         FROM "job-scheduler" WHERE "code" = $1`,
        [CODE],
      );
      return rows.map((row) => ({ ...row, fencingToken: Number(row.fencingToken), attempts: Number(row.attempts) }));
    } catch (error) {
      if (attempt >= 20) throw error;
      await sleep(500);
    }
  }
};

const readText = (file: string): string => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
};

/**
 * One mode's proof: a fresh cluster, the node processes ticking, the faults one after the
 * other with time to settle between them, then the final table and the checks. Every process it
 * started is gone when it returns or throws (and when this process exits).
 */
export const runFailoverMode = async (
  config: FailoverConfig,
  mode: FailoverMode,
  tools: FailoverTools,
  options: FailoverRunOptions,
): Promise<FailoverOutcome> => {
  const began = Date.now();
  const { log } = options;
  const say = (line: string): void => log(`[${mode}] ${line}`);
  const ports = clusterPorts(modePortBase(config, mode), 3);
  const busy: number[] = [];
  for (const port of allPorts(ports)) if (!(await portIsFree(port))) busy.push(port);
  if (busy.length > 0) throw new Error(`ports in use: ${busy.join(', ')} (another run still up? pick others with --port-base)`);

  const runAs = resolveRunAs();
  const runDir = await mkdtemp(join(config.workDir ?? tmpdir(), `sdcorejs-failover-${mode}-`));
  if (runAs) chownSync(runDir, runAs.uid, runAs.gid);
  let keep = config.keep;
  const cluster = new FailoverCluster(mode, tools, runDir, ports, runAs, say);
  let fleet: FailoverFleet | undefined;
  const forgetExitHandler = onProcessExit(() => {
    fleet?.killAll();
    cluster.killAll();
    if (!keep) rmSync(runDir, { recursive: true, force: true });
  });
  say(
    `run directory ${runDir}; HAProxy on ${ports.proxy}, etcd on ${ports.etcdClient}, members ${ports.members.map((m) => `${m.name} pg ${m.postgres} rest ${m.rest}`).join(', ')}`,
  );
  try {
    await cluster.start(120_000);
    const url = cluster.proxyUrl();
    await migrate(url);
    await cluster.waitHealthy(180_000);
    const replication = await readReplication(url, mode);
    say(`replication as the lease reads it: ${JSON.stringify(replication)}`);
    fleet = new FailoverFleet(config, runDir, url);
    await fleet.start(120_000);
    const firstTickAt = alignTick(Date.now() + 1_500, config.tickMs);
    fleet.broadcast({ type: 'start', firstTickAt });
    say(`${config.nodes} nodes ready; ticking every ${config.tickMs} ms from ${runKeyOf(firstTickAt)}`);
    await sleep(firstTickAt + config.warmupMs - Date.now());

    const faults = new FailoverFaults(config, cluster, say);
    const records: FaultRecord[] = [];
    let recoveredAt = Date.now() - config.settleMs;
    for (const kind of config.faults) {
      const waited = await cluster.waitHealthy(180_000);
      if (waited > 2_000) say(`three healthy members again after ${(waited / 1000).toFixed(1)} s`);
      await sleep(recoveredAt + config.settleMs - Date.now());
      const record = await faults.run(kind);
      records.push(record);
      recoveredAt = record.failoverMs === undefined ? Date.now() : record.at + record.failoverMs;
    }
    const waited = await cluster.waitHealthy(180_000);
    if (waited > 2_000) say(`three healthy members again after ${(waited / 1000).toFixed(1)} s`);
    await sleep(recoveredAt + config.settleMs - Date.now());

    const lastTickAt = alignTick(Date.now() + 1_000, config.tickMs);
    fleet.broadcast({ type: 'stop-ticks', lastTickAt });
    say(`last tick ${runKeyOf(lastTickAt)}; waiting for every tick's answer`);
    // What keeps the run from proving what it claims (it fails sync mode whatever the figures).
    const runProblems: string[] = [...replicationProblems(replication, mode), ...records.flatMap((record) => record.problems)];
    if (records.length !== config.faults.length) runProblems.push(`${records.length} of ${config.faults.length} faults carried out`);
    if (!(await fleet.untilIdle(config.giveUpMs + config.leaseMs + 15_000))) runProblems.push('some node still had ticks under way when the wait ended');
    await fleet.shutdown(30_000);
    const finalRows = await readFinalRows(url);

    const nodes = fleet.nodes.map((node) => ({ nodeId: node.nodeId, events: readFailoverEvents(node.eventsFile) }));
    const plannedTicks = tickInstants(firstTickAt, lastTickAt, config.tickMs).map(runKeyOf);
    const { figures, problems: checkProblems } = computeFailoverFigures({ plannedTicks, nodes, finalRows });

    // Owner tokens: what the nodes found in memory, and what the files of the run hold.
    const tokens = fleet.nodes.flatMap((node) => node.final?.ownerTokens ?? []);
    const files = [
      ...fleet.nodes.flatMap((node) => [node.eventsFile, node.outputFile]),
      ...readdirSync(runDir)
        .filter((name) => name.endsWith('.log'))
        .map((name) => join(runDir, name)),
    ];
    const inFiles = files.reduce((sum, file) => sum + countTokenOccurrences(readText(file), tokens), 0);
    const tokenLeaks = mergeLeakCounts(
      fleet.nodes.flatMap((node) => (node.final ? [node.final.leaks] : [])),
      inFiles,
    );
    const nodesCrashed = fleet.nodes.filter((node) => node.crashed).map((node) => `${node.nodeId} (${node.exit?.code ?? node.exit?.signal})`);
    if (tokens.length === 0) runProblems.push('the nodes reported no owner token: the leak check saw nothing to look for');
    const crashes = fleet.nodes.filter((node) => node.crashed).map((node) => `node ${node.nodeId} crashed:\n${node.outputTail(1_500)}`);
    const problems = [...runProblems, ...checkProblems, ...crashes];

    const rows = reportRows(figures, tokenLeaks, records, nodesCrashed, replication);
    const violations = violationsOf(rows);
    const ok = mode === 'async' ? true : violations.length === 0 && runProblems.length === 0;
    if (!ok) keep = true;
    const { help: _help, ...reportedConfig } = config;
    const report: FailoverReport = {
      mode,
      seed: config.seed,
      command: options.command,
      tree: options.tree,
      startedAt: new Date(began).toISOString(),
      durationSeconds: (Date.now() - began) / 1000,
      config: reportedConfig,
      figures,
      tokenLeaks,
      faults: records,
      replication,
      nodesCrashed,
      rows,
      ok,
      violations,
      problems,
    };
    return { report, ...(keep ? { runDir } : {}) };
  } catch (error) {
    keep = true;
    throw error;
  } finally {
    fleet?.killAll();
    const teardown = Date.now();
    await cluster.destroy().catch(() => cluster.killAll());
    killEverythingUnder(runDir);
    say(`cluster torn down in ${((Date.now() - teardown) / 1000).toFixed(1)} s`);
    forgetExitHandler();
    if (!keep) await rm(runDir, { recursive: true, force: true });
  }
};
