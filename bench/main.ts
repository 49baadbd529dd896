import 'reflect-metadata';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SCENARIOS } from './scenarios';
import { describeServer, startBenchServer } from './support/bench-server';
import { parseCliOptions, USAGE, UsageError } from './support/cli-options';
import { withCleanup } from './support/cleanup';
import { describeMachine } from './support/machine';
import { renderMarkdown, renderScenario } from './support/markdown';
import { installedPackages } from './support/packages';
import { type BenchReport, FigureSheet, type ScenarioReport } from './support/report';

const ROOT = join(__dirname, '..');
const RESULTS = join(__dirname, 'results');
/** Enough for stable medians; --quick is a smoke test with fewer, shorter runs. */
const REPETITIONS = 5;
const QUICK_REPETITIONS = 3;

const startedAt = performance.now();
const log = (message: string): void => {
  process.stderr.write(`[bench ${((performance.now() - startedAt) / 1000).toFixed(1)}s] ${message}\n`);
};

const describeError = (error: unknown): string => (error instanceof Error ? (error.stack ?? error.message) : String(error));

const writeResults = async (report: BenchReport, complete: boolean): Promise<string[]> => {
  await mkdir(RESULTS, { recursive: true });
  const json = `${JSON.stringify(report, null, 2)}\n`;
  if (!complete) {
    const path = join(RESULTS, 'partial.tmp.json');
    await writeFile(path, json);
    return [path];
  }
  const paths = [join(RESULTS, 'latest.json'), join(RESULTS, 'latest.md')];
  await writeFile(paths[0], json);
  await writeFile(paths[1], renderMarkdown(report));
  return paths;
};

const main = async (): Promise<void> => {
  const args = process.argv.slice(2);
  const options = parseCliOptions(
    args,
    SCENARIOS.map((scenario) => scenario.name),
  );
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const server = await startBenchServer();
  try {
    const report: BenchReport = {
      command: ['npm run bench', ...(args.length > 0 ? ['--', ...args] : [])].join(' '),
      quick: options.quick,
      startedAt: new Date().toISOString(),
      seconds: 0,
      machine: describeMachine(),
      server: await describeServer(server),
      packages: installedPackages(ROOT),
      scenarios: [],
      failures: [],
    };
    log(`${report.server.version} (${report.server.kind}), ${report.machine.cores} cores`);
    for (const scenario of SCENARIOS.filter((candidate) => options.scenarios.includes(candidate.name))) {
      const sheet = new FigureSheet();
      const scenarioStarted = performance.now();
      log(`${scenario.name}: start`);
      try {
        const outline = await withCleanup((cleanup) =>
          scenario.run({ quick: options.quick, repetitions: options.quick ? QUICK_REPETITIONS : REPETITIONS, cleanup, sheet, log }),
        );
        const result: ScenarioReport = {
          name: scenario.name,
          title: scenario.title,
          ...outline,
          figures: sheet.figures,
          goals: sheet.goals,
          notes: sheet.notes,
          seconds: (performance.now() - scenarioStarted) / 1000,
        };
        report.scenarios.push(result);
        process.stdout.write(`\n${renderScenario(result)}\n`);
      } catch (error) {
        log(`${scenario.name} failed: ${describeError(error)}`);
        report.failures.push({ scenario: scenario.name, error: error instanceof Error ? error.message : String(error) });
      }
    }
    report.seconds = (performance.now() - startedAt) / 1000;
    const complete = !options.quick && options.scenarios.length === SCENARIOS.length;
    for (const path of await writeResults(report, complete)) log(`wrote ${path}`);
    if (report.failures.length > 0) process.exitCode = 1;
  } finally {
    await server.stop();
  }
  log('done');
};

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof UsageError ? error.message : describeError(error)}\n`);
  process.exitCode = 1;
});
