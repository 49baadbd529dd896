import type { SchedulerChaosConfig } from './scheduler-chaos.config';
import {
  CLASSES,
  FAILING_CLASSES,
  type FaultEvent,
  type OccurrenceClass,
  type OccurrenceVerdict,
  type RecordKind,
  type Verdict,
  type VerdictFigures,
} from './scheduler-chaos.verdict';

export interface FaultCounts {
  kills: number;
  terms: number;
  shortStalls: number;
  longStalls: number;
  shortestLongStallMs: number;
  outages: number;
  backendsTerminated: number;
  clockSteps: number;
}

export interface SchedulerChaosReport {
  seed: number;
  preset: string;
  command: string;
  durationSeconds: number;
  database: string;
  config: SchedulerChaosConfig;
  instancesStarted: number;
  /** Every occurrence due in the window was settled (not RUNNING, no handler under way) before the instances stopped. */
  settled: boolean;
  faults: FaultCounts;
  figures: VerdictFigures;
  byJob: Verdict['byJob'];
  /** Up to 5 occurrences of each class but `once`, and of concurrent executions. */
  examples: Partial<Record<OccurrenceClass | 'concurrent', OccurrenceVerdict[]>>;
  failures: string[];
  /** Faults not carried out as planned, crashed instances: the run proves less than it says. */
  problems: string[];
  ok: boolean;
}

export const countFaults = (events: readonly FaultEvent[]): FaultCounts => {
  const longStalls = events.filter((event) => event.kind === 'stop' && event.mode === 'long') as Extract<FaultEvent, { kind: 'stop' }>[];
  return {
    kills: events.filter((event) => event.kind === 'kill').length,
    terms: events.filter((event) => event.kind === 'term').length,
    shortStalls: events.filter((event) => event.kind === 'stop' && event.mode === 'short').length,
    longStalls: longStalls.length,
    shortestLongStallMs: longStalls.length > 0 ? Math.min(...longStalls.map((event) => event.toMs - event.fromMs)) : 0,
    outages: events.filter((event) => event.kind === 'outage').length,
    backendsTerminated: events.reduce((sum, event) => sum + (event.kind === 'backend-kill' ? event.terminated : 0), 0),
    clockSteps: events.filter((event) => event.kind === 'clock-step').length,
  };
};

export const buildReport = (parts: {
  config: SchedulerChaosConfig;
  command: string;
  durationSeconds: number;
  database: string;
  verdict: Verdict;
  faults: readonly FaultEvent[];
  problems: string[];
  instances: number;
  settled: boolean;
}): SchedulerChaosReport => {
  const { verdict } = parts;
  const examples: SchedulerChaosReport['examples'] = {};
  const counted = verdict.occurrences.filter((occurrence) => occurrence.due || FAILING_CLASSES.has(occurrence.class) || occurrence.concurrentPairs > 0);
  for (const cls of CLASSES) {
    if (cls === 'once') continue;
    const some = counted.filter((occurrence) => occurrence.class === cls).slice(0, 5);
    if (some.length > 0) examples[cls] = some;
  }
  const concurrent = counted.filter((occurrence) => occurrence.concurrentPairs > 0).slice(0, 5);
  if (concurrent.length > 0) examples.concurrent = concurrent;
  const problems = [...parts.problems];
  if (!parts.settled) problems.push('the occurrences due in the window had not settled (RUNNING rows or handlers under way) when the instances were stopped');
  return {
    seed: parts.config.seed,
    preset: parts.config.preset,
    command: parts.command,
    durationSeconds: Math.round(parts.durationSeconds),
    database: parts.database,
    config: parts.config,
    instancesStarted: parts.instances,
    settled: parts.settled,
    faults: countFaults(parts.faults),
    figures: verdict.figures,
    byJob: verdict.byJob,
    examples,
    failures: verdict.failures,
    problems,
    ok: verdict.ok && problems.length === 0,
  };
};

/** A kept run's report with a new verdict on the same evidence (its faults and problems unchanged). */
export const rejudge = (before: SchedulerChaosReport, verdict: Verdict): SchedulerChaosReport => {
  const after = buildReport({
    config: before.config,
    command: before.command,
    durationSeconds: before.durationSeconds,
    database: before.database,
    verdict,
    faults: [],
    problems: before.problems.filter((problem) => !problem.startsWith('the occurrences due in the window had not settled')),
    instances: before.instancesStarted,
    settled: before.settled,
  });
  return { ...after, faults: before.faults };
};

const COLUMNS: Array<[OccurrenceClass | 'due' | 'concurrent', string]> = [
  ['due', 'due'],
  ['once', 'once'],
  ['rerun-justified', 're-run, justified'],
  ['rerun-unjustified', 're-run, NOT justified'],
  ['recorded-justified', 'recorded unrun, justified'],
  ['recorded-unjustified', 'recorded unrun, NOT justified'],
  ['lost-silently', 'lost silently'],
  ['lost-check-killed', 'lost, its check SIGKILLed (known limit)'],
  ['success-without-run', 'SUCCESS without run'],
  ['unexpected-run', 'ran, not due'],
  ['concurrent', 'concurrent'],
];

const RECORD_LABELS: Record<RecordKind, string> = {
  none: 'no row (lost silently)',
  success: 'SUCCESS (but no handler record)',
  running: 'left RUNNING',
  missed: "FAIL { outcome: 'missed' }",
  abandoned: 'FAIL { abandoned: true } (JOB_ABANDONED)',
  'given back': 'FAIL { released: true } (given back)',
  failed: 'FAIL, other',
};

const table = (header: string[], rows: string[][], alignRight: boolean[]): string => {
  const widths = header.map((cell, index) => Math.max(cell.length, ...rows.map((row) => row[index].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((cell, index) => (alignRight[index] ? cell.padStart(widths[index]) : cell.padEnd(widths[index]))).join(' | ')} |`;
  const rule = `| ${widths.map((width, index) => (alignRight[index] ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width))).join(' | ')} |`;
  return [line(header), rule, ...rows.map(line)].join('\n');
};

const describeRuns = (occurrence: OccurrenceVerdict): string =>
  occurrence.runs
    .map((run) => `${run.nodeId} ${run.trigger} token ${run.fencingToken} [${run.startedAt}..${run.endedAt ?? '?'}] ms ${run.outcome}`)
    .join('; ') || 'no run';

export const renderReport = (report: SchedulerChaosReport): string => {
  const jobs = Object.keys(report.byJob).sort();
  const totals = Object.fromEntries(COLUMNS.map(([key]) => [key, jobs.reduce((sum, job) => sum + report.byJob[job][key], 0)]));
  const rows = [
    ...jobs.map((job) => [job, ...COLUMNS.map(([key]) => String(report.byJob[job][key]))]),
    ['**all**', ...COLUMNS.map(([key]) => `**${totals[key]}**`)],
  ];
  const main = table(['job', ...COLUMNS.map(([, label]) => label)], rows, [false, ...COLUMNS.map(() => true)]);
  const { faults, figures } = report;
  const faultsLine =
    `faults: ${faults.kills} SIGKILL, ${faults.terms} SIGTERM (graceful restarts), ${faults.shortStalls} short + ${faults.longStalls} long SIGSTOP` +
    `${faults.longStalls > 0 ? ` (shortest long ${faults.shortestLongStallMs} ms)` : ''}, ${faults.outages} proxy outage(s), ` +
    `${faults.backendsTerminated} backends terminated, ${faults.clockSteps} wall-clock step(s)`;
  const lines = [
    `## Scheduler chaos: ${report.ok ? 'PASS' : 'FAIL'}`,
    '',
    `seed ${report.seed}, preset ${report.preset}, window ${report.config.windowMs / 1_000} s, ${report.config.instances} instances at a time ` +
      `(${report.instancesStarted} processes in all), database ${report.database}, ${report.durationSeconds} s; replay: \`${report.command}\``,
    '',
    faultsLine,
    '',
    main,
    '',
    `runs ${figures.runs} (take-overs ${figures.takeOverRuns}); once: ${figures.onceCompleted} completed, ${figures.onceInterrupted} interrupted; ` +
      `frozen overlaps (a stopped owner woke and ended within 2 s) ${figures.frozenOverlaps}; runs started after their instance began shutting down ${figures.runsStartedAfterShutdownBegan}; ` +
      `runs started before their due instant ${figures.runsStartedBeforeTheirInstant} (by their own instance's clock too: ${figures.runsStartedBeforeTheirInstantByOwnClock}); runs missing from chaos_runs ${figures.runsMissingFromTable} / from the journals ${figures.runsMissingFromJournal}`,
  ];
  const causes = Object.entries(figures.rerunCauses);
  if (causes.length > 0) lines.push('', `justified re-runs by cause: ${causes.map(([cause, count]) => `${cause} ${count}`).join(', ')}`);
  const unrun = Object.entries(figures.unrunByRecord);
  if (unrun.length > 0) {
    lines.push(
      '',
      'Due occurrences that did not run, by what their lease row says:',
      '',
      table(
        ['row', 'justified', 'NOT justified'],
        unrun.map(([record, counts]) => [RECORD_LABELS[record as RecordKind], String(counts?.justified ?? 0), String(counts?.unjustified ?? 0)]),
        [false, true, true],
      ),
    );
  }
  const givenBack = Object.entries(figures.givenBackWhy);
  if (givenBack.length > 0) lines.push('', `given back unrun: ${givenBack.map(([why, count]) => `${count} ${why}`).join('; ')}`);
  if (report.failures.length > 0) lines.push('', '**Failures**', '', ...report.failures.map((failure) => `- ${failure}`));
  if (report.problems.length > 0)
    lines.push('', '**Problems** (the run proves less than it says)', '', ...report.problems.map((problem) => `- ${problem.split('\n')[0]}`));
  const exampleKeys = Object.keys(report.examples) as Array<keyof SchedulerChaosReport['examples']>;
  if (exampleKeys.length > 0) {
    lines.push('', '**Examples** (times in ms from the due instant)');
    for (const key of exampleKeys) {
      lines.push('', `*${key}*`, '');
      for (const occurrence of report.examples[key] ?? []) {
        lines.push(
          `- \`${occurrence.code}\` \`${occurrence.runKey}\`: ${occurrence.detail}. Runs: ${describeRuns(occurrence)}. Row: ${
            occurrence.row
              ? `${occurrence.row.status} attempts ${occurrence.row.attempts} owner ${occurrence.row.ownerId} data ${JSON.stringify(occurrence.row.data)}`
              : 'none'
          }`,
        );
      }
    }
  }
  return lines.join('\n');
};
