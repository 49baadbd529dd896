import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../test/support/test-database';
import { checkpoint, createBenchDatabase, holdTimedCheckpoints } from '../support/bench-database';
import type { CleanupStack } from '../support/cleanup';
import { formatNumber } from '../support/format';
import { describeMachine } from '../support/machine';
import { installedPackages } from '../support/packages';
import { type ExpectedOccurrences, ranExactlyOnce, startDelayPercentiles, tallyRuns } from '../support/peer-runs';
import { PEER_SCHEDULERS, type PeerScheduler, workerEntryOf } from '../support/peer-schedulers';
import {
  type PeerCaseResult,
  type PeerIdleResult,
  type PeersReport,
  renderPeersMarkdown,
  renderReadmeComparison,
  withReadmeComparison,
} from '../support/peers-markdown';
import { PeersProcess } from '../support/peers-process';
import type { PeersCaseFigures, PeersWindow, PeersWorkerCase } from '../support/peers-worker';
import { type DatabaseWal, openWalByDatabase, type WalByDatabase } from '../support/wal-by-database';
import type { Scenario } from './scenario';

const ROOT = join(__dirname, '..', '..');
const MINUTE_MS = 60_000;
/** A measured minute: from 5 s before its instant (ours claims 2 s ahead) to 55 s after it. */
const WINDOW = { beforeMs: 5_000, afterMs: 55_000 };
const WINDOW_SECONDS = (WINDOW.beforeMs + WINDOW.afterMs) / 1000;
/** Pools: 2 per node where one job is due (as the contended scenarios), 10 (pg's default) for 1,000 jobs. */
const SMALL_POOL = 2;
const JOBS_POOL = 10;
const IDLE_NODES = 2;
/** Time between the last boot and the first due minute's window, at least. */
const SETTLE_MS = 10_000;
/**
 * Due minutes after boot that are not measured: every peer has run before its window, so no window
 * holds a table's first row (ours: new index roots and a first page, about 640 B of WAL, which made
 * the first measured minute cost 1.5x the next ones).
 */
const WARM_UP_MINUTES = 1;

const SIZES = {
  full: { early: [2], late: [8], separate: [32], jobs: 1_000, jobsNodes: 3 },
  quick: { early: [2], late: [], separate: [], jobs: 100, jobsNodes: 3 },
};

interface PlannedCase {
  worker: PeersWorkerCase;
  peer: PeerScheduler;
  /** Single-job cases name their node count; the many-jobs case its jobs. */
  title: string;
  instant?: number;
}

const jobNames = (count: number): string[] => Array.from({ length: count }, (_, index) => `job-${String(index + 1).padStart(4, '0')}`);

const nextMinute = (after: number): number => Math.ceil(after / MINUTE_MS) * MINUTE_MS;

/** The first minute measured once the nodes booted now: past the settling time and the warm-up minutes. */
const firstMeasuredMinute = (): number => nextMinute(Date.now() + SETTLE_MS + WINDOW.beforeMs) + WARM_UP_MINUTES * MINUTE_MS;

const sleepUntil = (at: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

/** A database for one peer's case: ours gets the library's migrations, the others install their own schema at start. */
const databaseFor = async (peer: PeerScheduler, cleanup: CleanupStack): Promise<TestDatabase> =>
  peer.name === 'ours' ? createBenchDatabase(cleanup) : cleanup.add(await createTestDatabase({ migrate: false }), (created) => created.drop());

const windowOf = (caseName: string, instant: number): PeersWindow => ({ case: caseName, from: instant - WINDOW.beforeMs, to: instant + WINDOW.afterMs });

/** Reads the WAL position at `at`. */
const positionAt = async (wal: WalByDatabase, at: number): Promise<string> => {
  await sleepUntil(at);
  return wal.position();
};

export const peers: Scenario = {
  name: 'peers',
  title: 'Peers: pg-boss, graphile-worker and an advisory lock beside ours, one job due on 2 / 8 / 32 nodes and 1,000 jobs on 3',
  run: async ({ quick, cleanup, sheet, log }) => {
    const sizes = quick ? SIZES.quick : SIZES.full;
    const startedAt = new Date();
    const probe = await createBenchDatabase(cleanup);
    const wal = await openWalByDatabase(probe, cleanup);
    // No timed checkpoint inside a window: each phase checkpoints after its boot, so the warm-up
    // minute pays the full-page images of every page a peer touches, and no measured window does.
    const checkpointsHeld = await holdTimedCheckpoints(probe, cleanup);
    if (!checkpointsHeld) log('peers: the server refused ALTER SYSTEM: a timed checkpoint may fall inside a window');
    const [{ version }] = await probe.sql<{ version: string }>("SELECT current_setting('server_version') AS version");

    const singleTitle = (nodes: number) => `one job, ${nodes} nodes`;
    const jobsTitle = `${formatNumber(sizes.jobs)} jobs, ${sizes.jobsNodes} nodes`;
    const plan = async (peer: PeerScheduler, title: string, nodes: number, jobs: number, poolSize: number, idle = false): Promise<PlannedCase> => {
      const database = await databaseFor(peer, cleanup);
      return { peer, title, worker: { name: title, url: database.url, database: database.name, nodes, jobs: jobNames(jobs), poolSize, idle } };
    };

    log(`peers: ${PEER_SCHEDULERS.length} peers, databases and worker processes`);
    const early = new Map<PeerScheduler, PlannedCase[]>();
    const many = new Map<PeerScheduler, PlannedCase>();
    const separate = new Map<PeerScheduler, PlannedCase[]>();
    for (const peer of PEER_SCHEDULERS) {
      early.set(peer, [
        await plan(peer, 'idle', IDLE_NODES, 1, SMALL_POOL, true),
        ...(await Promise.all([...sizes.early, ...sizes.late].map((nodes) => plan(peer, singleTitle(nodes), nodes, 1, SMALL_POOL)))),
      ]);
      many.set(peer, await plan(peer, jobsTitle, sizes.jobsNodes, sizes.jobs, JOBS_POOL));
      separate.set(peer, await Promise.all(sizes.separate.map((nodes) => plan(peer, singleTitle(nodes), nodes, 1, SMALL_POOL))));
    }
    const spawn = (peer: PeerScheduler, label: string, cases: PlannedCase[]) =>
      new PeersProcess(`${peer.name} ${label}`, workerEntryOf(peer), { peer: peer.name, cases: cases.map((item) => item.worker) }, cleanup);
    const processes = PEER_SCHEDULERS.map((peer) => ({
      peer,
      early: spawn(peer, 'single jobs', early.get(peer) ?? []),
      many: spawn(peer, 'many jobs', [many.get(peer)!]),
      separate: (separate.get(peer) ?? []).length > 0 ? spawn(peer, 'many nodes', separate.get(peer) ?? []) : undefined,
    }));
    await Promise.all(processes.flatMap((item) => [item.early, item.many, ...(item.separate ? [item.separate] : [])].map((worker) => worker.next('ready'))));

    // Phase 1: the single-job cases of up to 8 nodes, the idle case and the many-jobs case, booted together.
    log('peers: booting the single-job, idle and many-jobs nodes');
    const bootMs = new Map<string, number>();
    for (const item of processes) for (const worker of [item.early, item.many]) worker.send({ kind: 'boot' });
    await Promise.all(
      processes.flatMap((item) => [item.early, item.many].map(async (worker) => bootMs.set(worker.label, (await worker.next('booted')).bootMs))),
    );
    await checkpoint(probe);
    const first = firstMeasuredMinute();
    const lateInstants = sizes.late.map((_, index) => first + (index + 1) * MINUTE_MS);
    for (const peer of PEER_SCHEDULERS) {
      const cases = early.get(peer) ?? [];
      cases[0].instant = first;
      sizes.early.forEach((_, index) => (cases[1 + index].instant = first));
      sizes.late.forEach((_, index) => (cases[1 + sizes.early.length + index].instant = lateInstants[index]));
      many.get(peer)!.instant = first;
    }
    log(`peers: measuring ${new Date(first).toISOString()}${lateInstants.map((instant) => `, ${new Date(instant).toISOString()}`).join('')}`);
    const positions = new Map<number, Promise<string>>();
    const positionOf = (at: number) => {
      if (!positions.has(at)) positions.set(at, positionAt(wal, at));
      return positions.get(at)!;
    };
    const measure = async (worker: PeersProcess, cases: PlannedCase[]) => {
      for (const item of cases) {
        void positionOf(item.instant! - WINDOW.beforeMs);
        void positionOf(item.instant! + WINDOW.afterMs);
      }
      worker.send({ kind: 'measure', windows: cases.map((item) => windowOf(item.worker.name, item.instant!)) });
      return (await worker.next('figures')).cases;
    };
    const figures = new Map<PlannedCase, PeersCaseFigures>();
    const collect = async (worker: PeersProcess, cases: PlannedCase[]) => {
      const reported = await measure(worker, cases);
      for (const item of cases) {
        const found = reported.find((candidate) => candidate.case === item.worker.name);
        if (found) figures.set(item, found);
      }
    };
    await Promise.all(processes.flatMap((item) => [collect(item.early, early.get(item.peer) ?? []), collect(item.many, [many.get(item.peer)!])]));

    // Phase 2: the many-nodes cases alone (their connections would not fit beside phase 1's).
    if (processes.some((item) => item.separate)) {
      log('peers: booting the many-nodes cases');
      for (const item of processes) item.separate?.send({ kind: 'boot' });
      await Promise.all(processes.map(async (item) => item.separate && bootMs.set(item.separate.label, (await item.separate.next('booted')).bootMs)));
      await checkpoint(probe);
      const instant = firstMeasuredMinute();
      log(`peers: measuring ${new Date(instant).toISOString()}`);
      for (const cases of separate.values()) for (const item of cases) item.instant = instant;
      await Promise.all(processes.flatMap((item) => (item.separate ? [collect(item.separate, separate.get(item.peer) ?? [])] : [])));
    }

    const walOf = async (item: PlannedCase): Promise<DatabaseWal> => {
      const from = await positionOf(item.instant! - WINDOW.beforeMs);
      const to = await positionOf(item.instant! + WINDOW.afterMs);
      return (await wal.between(from, to)).get(item.worker.database) ?? { walBytes: 0, fpiBytes: 0, xids: 0 };
    };

    // Idle: per node and second, over a minute with nothing due.
    const idle = new Map<PeerScheduler, PeerIdleResult>();
    for (const peer of PEER_SCHEDULERS) {
      const item = (early.get(peer) ?? [])[0];
      const measured = figures.get(item);
      const written = await walOf(item);
      const perNodeSecond = (value: number) => value / IDLE_NODES / WINDOW_SECONDS;
      idle.set(peer, {
        peer: peer.name,
        nodes: IDLE_NODES,
        statementsPerSecond: perNodeSecond(measured?.windowStatements ?? Number.NaN),
        walBytesPerSecond: perNodeSecond(written.walBytes),
        xidsPerMinute: (written.xids / IDLE_NODES / WINDOW_SECONDS) * 60,
        runs: measured?.runs.length ?? Number.NaN,
      });
    }

    const results: PeerCaseResult[] = [];
    const allCases = PEER_SCHEDULERS.flatMap((peer) => [...(early.get(peer) ?? []).slice(1), many.get(peer)!, ...(separate.get(peer) ?? [])]);
    for (const item of allCases) {
      const measured = figures.get(item);
      const written = await walOf(item);
      const instant = item.instant!;
      const expected: ExpectedOccurrences = { jobs: item.worker.jobs, instants: [instant] };
      // Jobs are due every minute: only the runs of the measured minute's occurrences count.
      const tally = tallyRuns(expected, measured?.runs ?? []);
      const { p50, p99 } = startDelayPercentiles(tally);
      const perRun = (value: number) => value / tally.expected;
      const idleFigures = idle.get(item.peer)!;
      const idleStatements = idleFigures.statementsPerSecond * item.worker.nodes * WINDOW_SECONDS;
      const idleWal = idleFigures.walBytesPerSecond * item.worker.nodes * WINDOW_SECONDS;
      // A window that cost less than the idle rate predicts (a peer whose idle work is bursty) has
      // no figure above idle: NaN, shown "n/a" and left out of the verdicts, rather than negative.
      const aboveIdle = (window: number, idleCost: number) => (window < idleCost ? Number.NaN : perRun(window - idleCost));
      results.push({
        case: item.title,
        peer: item.peer.name,
        durable: item.peer.durable,
        nodes: item.worker.nodes,
        jobs: item.worker.jobs.length,
        instant: new Date(instant).toISOString(),
        measured: measured !== undefined,
        expected: tally.expected,
        ran: tally.ran,
        doubles: tally.doubles,
        misses: tally.misses,
        exactlyOnce: measured !== undefined && ranExactlyOnce(tally),
        statementsPerRun: perRun(measured?.windowStatements ?? Number.NaN),
        statementsAboveIdlePerRun: aboveIdle(measured?.windowStatements ?? Number.NaN, idleStatements),
        walBytesPerRun: perRun(written.walBytes),
        walBytesAboveIdlePerRun: aboveIdle(written.walBytes, idleWal),
        walFpiBytesPerRun: perRun(written.fpiBytes),
        xidsPerRun: perRun(written.xids),
        startDelayP50Ms: p50,
        startDelayP99Ms: p99,
        cpuMsPerRun: perRun((measured?.windowCpuMicros ?? Number.NaN) / 1000),
      });
    }

    addFigures(sheet, results, [...idle.values()]);
    addVerdicts(sheet, results);
    sheet.note(
      `Each peer runs in processes of its own (one per phase), its nodes inside as independent pools; each peer and case in a database of its own on the same server, all peers side by side at the same due minutes. Statements are counted at the driver (pg Client.query, by database); WAL bytes and xids are the server's WAL records between the window's positions, split by database with pg_walinspect; the full-page images in them (a page's first change after a checkpoint, written whole) are shown apart, since a checkpoint in a window charges every peer for the pages it touches then: timed checkpoints are held off for the scenario (checkpoint_timeout 1 h) and each phase checkpoints after its boot, so the unmeasured warm-up minute pays them${checkpointsHeld ? '' : ' (not on this server: it refused ALTER SYSTEM)'}. A window is the due minute from ${WINDOW.beforeMs / 1000} s before the instant to ${WINDOW.afterMs / 1000} s after it, so it includes each peer's polling; the first due minute after boot is not measured (a table's first row pays for new index roots); "above idle" subtracts the idle case's rate for as many nodes (n/a where the window cost less than that: the peer's idle work is bursty). CPU is the worker process's (user + system) in the window. One measured minute per case: a single-job case has one start delay per peer. The machine is shared: latency and CPU figures are noisy.`,
    );

    const report: PeersReport = {
      command: `npm run bench -- ${quick ? '--quick ' : ''}peers`,
      startedAt: startedAt.toISOString(),
      machine: describeMachine(),
      server: `PostgreSQL ${version}`,
      packages: installedPackages(ROOT),
      peers: PEER_SCHEDULERS.map((peer) => ({ name: peer.name, description: peer.description, durable: peer.durable })),
      idle: [...idle.values()],
      cases: results,
      bootMs: Object.fromEntries(bootMs),
      window: WINDOW,
    };
    if (!quick) {
      await mkdir(join(ROOT, 'bench', 'results'), { recursive: true });
      await writeFile(join(ROOT, 'bench', 'results', 'peers.json'), `${JSON.stringify(report, null, 2)}\n`);
      await writeFile(join(ROOT, 'docs', 'peers.md'), renderPeersMarkdown(report));
      const readme = join(ROOT, 'README.md');
      await writeFile(readme, withReadmeComparison(await readFile(readme, 'utf8'), renderReadmeComparison(report)));
      log("peers: wrote bench/results/peers.json, docs/peers.md and the README's comparison table");
    }
    return {
      sizes: `one job due on ${[...sizes.early, ...sizes.late, ...sizes.separate].join(' / ')} nodes (pool ${SMALL_POOL} each), ${formatNumber(sizes.jobs)} jobs on ${sizes.jobsNodes} nodes (pool ${JOBS_POOL} each), idle on ${IDLE_NODES} nodes; one measured minute per case, ${WINDOW_SECONDS} s windows`,
      variants: Object.fromEntries(PEER_SCHEDULERS.map((peer) => [peer.name, peer.description])),
    };
  },
};

const addFigures = (sheet: Parameters<Scenario['run']>[0]['sheet'], results: PeerCaseResult[], idle: PeerIdleResult[]): void => {
  for (const result of results) {
    const add = (metric: string, unit: string, value: number) => sheet.add(result.case, result.peer, metric, unit, [value]);
    add('occurrences run / expected', 'runs', result.ran);
    add('doubles', 'runs', result.doubles);
    add('misses', 'runs', result.misses);
    add('statements per run', '', result.statementsPerRun);
    add('statements per run above idle', '', result.statementsAboveIdlePerRun);
    add('WAL per run', 'bytes', result.walBytesPerRun);
    add('WAL per run above idle', 'bytes', result.walBytesAboveIdlePerRun);
    add('WAL per run: full-page images in it', 'bytes', result.walFpiBytesPerRun ?? Number.NaN);
    add('xids per run', '', result.xidsPerRun);
    add('start delay p50', 'ms', result.startDelayP50Ms);
    add('start delay p99', 'ms', result.startDelayP99Ms);
    add('CPU per run', 'ms', result.cpuMsPerRun);
  }
  for (const figures of idle) {
    sheet.add('idle', figures.peer, 'statements per second per node', '', [figures.statementsPerSecond]);
    sheet.add('idle', figures.peer, 'WAL per second per node', 'bytes', [figures.walBytesPerSecond]);
    sheet.add('idle', figures.peer, 'xids per minute per node', '', [figures.xidsPerMinute]);
  }
};

/** The issue's verdicts: ours exactly once, fewest statements, least WAL (among durable peers) and lowest p99. */
const addVerdicts = (sheet: Parameters<Scenario['run']>[0]['sheet'], results: PeerCaseResult[]): void => {
  for (const caseName of [...new Set(results.map((result) => result.case))]) {
    const rows = results.filter((result) => result.case === caseName);
    const ours = rows.find((result) => result.peer === 'ours');
    if (!ours) continue;
    const durable = rows.filter((result) => result.durable && result.peer !== 'ours');
    const others = rows.filter((result) => result.peer !== 'ours');
    sheet.goal(
      `${caseName}: ours runs each occurrence exactly once`,
      '0 doubles, 0 misses',
      `${ours.ran}/${ours.expected} run, ${ours.doubles} doubles, ${ours.misses} misses`,
      ours.exactlyOnce,
    );
    const compare = (label: string, value: (result: PeerCaseResult) => number, among: PeerCaseResult[], unit: string) => {
      const shown = (result: PeerCaseResult) => (Number.isNaN(value(result)) ? 'n/a' : `${formatNumber(value(result))}${unit}`);
      const measured = [ours, ...among].map((result) => `${result.peer} ${shown(result)}`).join(' · ');
      const best = Math.min(...among.map(value).filter((candidate) => !Number.isNaN(candidate)));
      // A figure above idle that could not be measured (n/a) leaves the comparison undecided, not won.
      const undecided = label.endsWith('above idle') && [ours, ...among].some((result) => Number.isNaN(value(result)));
      const target = among === durable ? 'ours ≤ every durable peer' : 'ours ≤ every peer';
      sheet.goal(`${caseName}: ${label}`, target, undecided ? `${measured} (not comparable)` : measured, undecided ? null : value(ours) <= best);
    };
    compare('fewest statements per run (window)', (result) => result.statementsPerRun, durable, '');
    compare('fewest statements per run above idle', (result) => result.statementsAboveIdlePerRun, durable, '');
    compare('least WAL per run (window)', (result) => result.walBytesPerRun, durable, ' B');
    compare('least WAL per run above idle', (result) => result.walBytesAboveIdlePerRun, durable, ' B');
    compare('lowest start delay p99', (result) => result.startDelayP99Ms, others, ' ms');
    for (const peer of others) {
      sheet.goal(
        `${caseName}: ${peer.peer} exactly once`,
        'reported',
        `${peer.ran}/${peer.expected} run, ${peer.doubles} doubles, ${peer.misses} misses`,
        null,
      );
    }
  }
};
