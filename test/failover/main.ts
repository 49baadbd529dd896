import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FAILOVER_USAGE, parseFailoverArguments } from './failover.config';
import { runFailoverMode } from './failover.orchestrator';
import { type FailoverReport, renderReport } from './failover.report';
import { ensureTools } from './failover.tools';

/**
 * `npm run failover`: the lease on a real high-availability PostgreSQL. A Patroni cluster of
 * three (etcd, PostgreSQL 15, HAProxy in front), node processes racing for a tick every 500 ms,
 * and three failovers while they run: a crash of the leader, a crash while the replicas lag, a
 * switchover. Once in synchronous mode, once in asynchronous mode; one table per mode. Exit code
 * 1 when an invariant does not hold in synchronous mode (asynchronous mode is reported as
 * measured: it may lose acknowledged writes by design).
 */
const began = Date.now();
const log = (line: string): void => {
  process.stderr.write(`[failover ${((Date.now() - began) / 1000).toFixed(1)}s] ${line}\n`);
};

/** The source the nodes run: HEAD, and whether src/ or migrations/ differ from it. */
const describeTree = (): string => {
  try {
    const git = (...args: string[]): string => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const head = git('rev-parse', '--short', 'HEAD');
    const changed = git('status', '--porcelain', '--', 'src', 'migrations');
    return changed === '' ? head : `${head} + uncommitted changes in src/ or migrations/`;
  } catch {
    return 'unknown (no git)';
  }
};

const main = async (): Promise<number> => {
  const config = parseFailoverArguments(process.argv.slice(2), join(__dirname, 'results'));
  if (config.help) {
    process.stdout.write(`${FAILOVER_USAGE}\n`);
    return 0;
  }
  const tools = ensureTools(log);
  const modes = config.modes.join(' ');
  const command = `npm run failover -- --mode ${config.modes.length > 1 ? 'both' : modes} --nodes ${config.nodes} --seed ${config.seed}`;
  const tree = describeTree();
  log(`seed ${config.seed}; modes ${modes}; tree ${tree}`);
  await mkdir(config.resultsDir, { recursive: true });
  const reports: FailoverReport[] = [];
  for (const mode of config.modes) {
    const { report, runDir } = await runFailoverMode(config, mode, tools, { log, command, tree });
    reports.push(report);
    const file = join(config.resultsDir, `latest-${mode}.json`);
    await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(`\n${renderReport(report)}\n\nJSON: ${file}${runDir ? `\nrun directory kept: ${runDir}` : ''}\n`);
  }
  log(`done in ${((Date.now() - began) / 1000).toFixed(0)} s`);
  return reports.every((report) => report.ok) ? 0 : 1;
};

// Ctrl-C or a kill from a test runner: the exit handlers then stop every process this run started.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => process.exit(130));

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`failover run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
