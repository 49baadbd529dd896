import 'reflect-metadata';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseSchedulerChaosArguments, SCHEDULER_CHAOS_USAGE } from './scheduler-chaos.config';
import { runSchedulerChaos } from './scheduler-chaos.orchestrator';
import { rejudge, renderReport, type SchedulerChaosReport } from './scheduler-chaos.report';
import { judge, type VerdictInput } from './scheduler-chaos.verdict';

/**
 * `npm run chaos:scheduler`: the scheduler's fault proof. At least 4 instance processes, each a
 * Nest application declaring @Scheduled jobs (global and per-tenant), a @RunOnce @Cron and
 * dynamic schedules with the library's defaults, run through SIGKILL, SIGSTOP past the lease,
 * graceful rolling restarts just before due instants, overrunning handlers, terminated
 * connections, a proxy outage and a wall-clock step; then every due occurrence is classified
 * from the handlers' own records and the lease table. Exit 1 when an occurrence was lost, run
 * twice without a crash to justify it, or run by two handlers at once; 2 when the run failed.
 */
const began = performance.now();
const log = (line: string): void => {
  process.stderr.write(`[scheduler chaos ${((performance.now() - began) / 1000).toFixed(1)}s] ${line}\n`);
};

const main = async (): Promise<number> => {
  const options = parseSchedulerChaosArguments(process.argv.slice(2));
  if (options.help) {
    process.stdout.write(`${SCHEDULER_CHAOS_USAGE}\n`);
    return 0;
  }
  if (options.judgeDirectory) {
    // The verdict again, on the evidence of a kept run (after the verdict's rules changed, say).
    const evidence = JSON.parse(await readFile(join(options.judgeDirectory, 'evidence.json'), 'utf8')) as VerdictInput;
    const before = JSON.parse(await readFile(join(options.judgeDirectory, 'report.json'), 'utf8')) as SchedulerChaosReport;
    const report = rejudge(before, judge(evidence));
    process.stdout.write(`\n${renderReport(report)}\n`);
    if (options.reportPath) await writeFile(options.reportPath, `${JSON.stringify(report, null, 2)}\n`);
    return report.ok ? 0 : 1;
  }
  const { config } = options;
  const minutes = config.preset === 'full' ? ` --minutes ${config.windowMs / 60_000}` : '';
  const command = `npm run chaos:scheduler -- --preset ${config.preset}${minutes} --seed ${config.seed}${config.clockSteps === 0 ? ' --no-clock-step' : ''}`;
  log(`seed ${config.seed} (replay: ${command})`);
  const { report, runDirectory } = await runSchedulerChaos(config, { log, command, keep: options.keep });
  process.stdout.write(`\n${renderReport(report)}\n`);
  const json = JSON.stringify(report, null, 2);
  process.stdout.write(
    `\n\`\`\`json\n${JSON.stringify({ seed: report.seed, ok: report.ok, byClass: report.figures.byClass, concurrent: report.figures.concurrent, failures: report.failures, problems: report.problems.map((problem) => problem.split('\n')[0]) }, null, 2)}\n\`\`\`\n`,
  );
  if (runDirectory) process.stdout.write(`\njournals, outputs, evidence.json and occurrences.json: ${runDirectory}\n`);
  if (options.reportPath) await writeFile(options.reportPath, `${json}\n`);
  return report.ok ? 0 : 1;
};

// Ctrl-C or a kill from a test runner: exit handlers then stop every process this run started.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`scheduler chaos run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
