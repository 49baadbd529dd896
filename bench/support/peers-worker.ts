import 'reflect-metadata';
import { createInterface } from 'node:readline';
import type { ObservedRun } from './peer-runs';
import { cronAt, type StartNodes, type StopNodes } from './peer-schedulers';
import { onWireStatement } from './wire-statements';

/**
 * One peer's nodes for some cases of the peers scenario, in a process of its own (so that its CPU
 * is its own). It loads, prints `ready`, and then follows commands on stdin, one JSON line each:
 *
 * - `boot`: starts every case's nodes (one after the other, as a deployment's instances boot),
 *   then prints `booted`. Jobs are due every minute (an idle case's once a year, half a year
 *   from now), so every peer has run at least once before it is measured (the scenario skips the
 *   first due minute after boot), and the scenario picks the measured minutes once all have booted.
 * - `measure`: a window per case; once the last has closed, prints `figures` (statements each
 *   case's nodes sent, counted at the driver by database, and the process's CPU, both within the
 *   case's window, and every run each case started) and exits.
 *
 * Each peer's entry (bench/support/peer-workers/<peer>.ts) calls runPeersWorker with its own
 * start, so a process loads only its peer. Arguments (JSON in argv[2]): PeersWorkerArguments.
 */
export interface PeersWorkerCase {
  name: string;
  /** A database of its own (the driver's statements are told apart by it). */
  url: string;
  database: string;
  nodes: number;
  jobs: string[];
  poolSize: number;
  /** Jobs due once a year instead of every minute: nothing is due while the case runs. */
  idle: boolean;
}

export interface PeersWorkerArguments {
  peer: string;
  cases: PeersWorkerCase[];
}

export interface PeersWindow {
  case: string;
  from: number;
  to: number;
}

export type PeersWorkerCommand = { kind: 'boot' } | { kind: 'measure'; windows: PeersWindow[] };

export interface PeersCaseFigures {
  case: string;
  windowStatements: number;
  windowCpuMicros: number;
  runs: ObservedRun[];
}

export type PeersWorkerLine =
  { kind: 'ready'; peer: string } | { kind: 'booted'; peer: string; bootMs: number } | { kind: 'figures'; peer: string; cases: PeersCaseFigures[] };

/** Resolves once the line is handed to the pipe: a process that exits before then cuts it short. */
const print = (line: PeersWorkerLine): Promise<void> =>
  new Promise((resolve, reject) => process.stdout.write(`${JSON.stringify(line)}\n`, (error) => (error ? reject(error) : resolve())));

const until = (at: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

const EVERY_MINUTE = '* * * * *';
/**
 * A whole minute about half a year ahead: a cron due then is not due while the bench runs. Not a
 * year ahead: a cron has no year, so that would be this very day's next minute (the idle case once
 * ran at its measured minute so).
 */
const halfAYearAhead = (): number => Math.ceil((Date.now() + 182 * 24 * 3_600_000) / 60_000) * 60_000;

const main = async (startNodes: StartNodes): Promise<void> => {
  const options = JSON.parse(process.argv[2]) as PeersWorkerArguments;
  const peer = { name: options.peer, start: startNodes };
  const statements = new Map<string, number>();
  onWireStatement((statement) => {
    if (statement.database !== undefined) statements.set(statement.database, (statements.get(statement.database) ?? 0) + 1);
  });
  const runs = new Map<string, ObservedRun[]>(options.cases.map((item) => [item.name, []]));
  const stops: StopNodes[] = [];

  const boot = async (): Promise<void> => {
    const started = performance.now();
    for (const item of options.cases) {
      const caseRuns = runs.get(item.name) ?? [];
      stops.push(
        await peer.start({
          url: item.url,
          nodes: item.nodes,
          jobs: item.jobs,
          cron: item.idle ? cronAt([halfAYearAhead()]) : EVERY_MINUTE,
          poolSize: item.poolSize,
          onRun: (job, dueAt) => caseRuns.push({ job, dueAt, startedAt: Date.now() }),
        }),
      );
    }
    await print({ kind: 'booted', peer: peer.name, bootMs: performance.now() - started });
  };

  const measure = async (windows: PeersWindow[]): Promise<void> => {
    const figures = await Promise.all(
      windows.map(async (window): Promise<PeersCaseFigures> => {
        const item = options.cases.find((candidate) => candidate.name === window.case);
        if (!item) throw new Error(`unknown case ${window.case}`);
        await until(window.from);
        const statementsBefore = statements.get(item.database) ?? 0;
        const cpuBefore = process.cpuUsage();
        await until(window.to);
        const cpu = process.cpuUsage(cpuBefore);
        return {
          case: item.name,
          windowStatements: (statements.get(item.database) ?? 0) - statementsBefore,
          windowCpuMicros: cpu.user + cpu.system,
          // Only the runs of occurrences due in the window: jobs are due every minute, and a long line is slow to pass.
          runs: (runs.get(item.name) ?? []).filter((run) => run.dueAt >= window.from && run.dueAt < window.to),
        };
      }),
    );
    await print({ kind: 'figures', peer: peer.name, cases: figures });
    // The figures are out: a stop that hangs (a peer waiting for its pollers) must not hold the bench.
    setTimeout(() => process.exit(0), 5_000).unref();
    await Promise.allSettled(stops.map((stop) => stop()));
    process.exit(0);
  };

  const commands = createInterface({ input: process.stdin });
  commands.on('line', (line) => {
    const command = JSON.parse(line) as PeersWorkerCommand;
    const done = command.kind === 'boot' ? boot() : measure(command.windows);
    done.catch((error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    });
  });
  await print({ kind: 'ready', peer: peer.name });
};

/** Runs this process as a peers worker for the peer that `startNodes` starts. */
export const runPeersWorker = (startNodes: StartNodes): void => {
  main(startNodes).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
};
