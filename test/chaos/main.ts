import 'reflect-metadata';
import { writeFile } from 'node:fs/promises';
import { CHAOS_USAGE, parseChaosArguments } from './chaos.config';
import { runChaos } from './chaos.orchestrator';
import { renderReport } from './chaos.report';

/**
 * `npm run chaos`: at least 8 worker processes race for 500 logical runs while the seeded faults
 * happen (SIGKILL, SIGSTOP past the lease, pg_terminate_backend, a server restart, a skewed
 * clock); then one table of figures, every invariant checked. Exit code 1 when one does not hold.
 */
const began = performance.now();
const log = (line: string): void => {
  process.stderr.write(`[chaos ${((performance.now() - began) / 1000).toFixed(1)}s] ${line}\n`);
};

const main = async (): Promise<number> => {
  const options = parseChaosArguments(process.argv.slice(2));
  if (options.help) {
    process.stdout.write(`${CHAOS_USAGE}\n`);
    return 0;
  }
  const { config } = options;
  const command = `npm run chaos -- ${config.preset === 'full' ? '' : `--preset ${config.preset} `}--seed ${config.seed}`;
  log(`seed ${config.seed} (replay: ${command})`);
  const { report, runDirectory } = await runChaos(config, { log, command, keep: options.keep });
  process.stdout.write(`\n${renderReport(report)}\n`);
  if (runDirectory) process.stdout.write(`\nworker events and output: ${runDirectory}\n`);
  if (options.reportPath) await writeFile(options.reportPath, `${JSON.stringify(report, null, 2)}\n`);
  return report.ok ? 0 : 1;
};

// Ctrl-C or a kill from a test runner: exit handlers then stop every process this run started.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`chaos run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
