import { formatNumber } from './format';
import type { BenchReport, GoalCheck, ScenarioReport } from './report';

const row = (cells: readonly string[]): string => `| ${cells.map((cell) => cell.replace(/\|/g, '\\|')).join(' | ')} |`;

const table = (header: readonly string[], rows: readonly (readonly string[])[]): string[] => [row(header), row(header.map(() => '---')), ...rows.map(row)];

const verdict = (goal: GoalCheck): string => (goal.met === null ? 'n/a' : goal.met ? 'met' : '**missed**');

const header = (report: BenchReport): string[] => {
  const { machine, server } = report;
  const settings = ['fsync', 'synchronous_commit', 'shared_buffers', 'max_connections']
    .filter((name) => server.settings[name] !== undefined)
    .map((name) => `${name}=${server.settings[name]}`)
    .join(', ');
  return [
    '# Benchmark results',
    '',
    `- Command: \`${report.command}\`${report.quick ? ' (quick: short runs, figures are indicative only)' : ''}`,
    `- Machine: ${machine.cores} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, ${machine.platform}, Node ${machine.node}`,
    `- Server: ${server.version} (${server.kind}; ${settings})`,
    `- Packages: ${Object.entries(report.packages)
      .map(([name, version]) => `${name} ${version}`)
      .join(', ')}`,
    `- Run: ${report.startedAt}, ${formatNumber(report.seconds / 60)} min in total`,
    '',
    'Each figure is the median (min–max) over repetitions interleaved with the other variants',
    '(A B C, B C A, ...). A ratio pairs repetitions measured side by side. The machine is shared,',
    'so absolute figures are noisy; ratios are what compare.',
  ];
};

const goalsSection = (report: BenchReport): string[] => [
  '## Goals',
  '',
  ...table(
    ['Scenario', 'Goal', 'Target', 'Measured', 'Verdict'],
    report.scenarios.flatMap((scenario) => scenario.goals.map((goal) => [scenario.name, goal.goal, goal.target, goal.measured, verdict(goal)])),
  ),
];

/** A scenario's tables; numbered (`## 3. …`) in a full report, by the order the scenarios ran. */
const scenarioSection = (scenario: ScenarioReport, number?: number): string[] => [
  `## ${number === undefined ? '' : `${number}. `}${scenario.title}`,
  '',
  `\`npm run bench -- ${scenario.name}\` · ${scenario.sizes} · ${formatNumber(scenario.seconds)} s`,
  '',
  ...table(
    ['Case', 'Variant', 'Metric', 'Min', 'Median', 'Max'],
    scenario.figures.map((figure) => [
      figure.case,
      figure.variant,
      figure.unit ? `${figure.metric} (${figure.unit})` : figure.metric,
      formatNumber(figure.spread.min),
      formatNumber(figure.spread.median),
      formatNumber(figure.spread.max),
    ]),
  ),
  '',
  ...Object.entries(scenario.variants).map(([name, description]) => `- \`${name}\`: ${description}`),
  ...scenario.notes.map((note) => `- ${note}`),
];

/** The markdown the README shows: the machine and server, the goals, then each scenario. */
export const renderMarkdown = (report: BenchReport): string =>
  [
    ...header(report),
    '',
    ...goalsSection(report),
    ...report.failures.flatMap((failure) => ['', `**${failure.scenario} failed:** ${failure.error}`]),
    ...report.scenarios.flatMap((scenario, index) => ['', ...scenarioSection(scenario, index + 1)]),
    '',
  ].join('\n');

/** One scenario's tables, as printed when it finishes. */
export const renderScenario = (scenario: ScenarioReport): string =>
  [
    ...scenarioSection(scenario),
    '',
    ...table(
      ['Goal', 'Target', 'Measured', 'Verdict'],
      scenario.goals.map((goal) => [goal.goal, goal.target, goal.measured, verdict(goal)]),
    ),
    '',
  ].join('\n');
