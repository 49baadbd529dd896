import type { ChaosConfig } from './chaos.config';
import type { ChaosEvidence } from './chaos.evidence';
import type { FaultRecords } from './chaos.faults';
import { resourceOf } from './chaos.protocol';

/** Every figure of a chaos run. The `must*` ones are the invariants. */
export interface ChaosFigures {
  logicalRuns: number;
  workerProcesses: number;
  successRows: number;
  reclaimedRuns: number;
  kills: number;
  pauses: number;
  /** The shortest SIGSTOP of the run: it must outlast the lease. */
  shortestPauseMs: number;
  pausedRunsLost: number;
  backendKills: number;
  restarts: number;
  skewedClockHours: number;
  skewedWorkerRuns: number;
  staleWritesRefused: number;
  duplicateEffectsRefused: number;
  supersededStaleWrites: number;
  plannedFailures: number;
  lostLeaseErrors: number;
  databaseErrorsSurvived: number;
  doubleSuccess: number;
  sideEffectRowsOverOne: number;
  staleFencedWritesAccepted: number;
  resourcesNotLastWrittenByCompleter: number;
  successWithoutSideEffect: number;
  pausedOwnersNotStopped: number;
  earlyReclaims: number;
  runsNeverFinished: number;
  workersCrashed: number;
  ownerTokensInLogs: number;
}

export type Requirement = { kind: 'zero' } | { kind: 'equals'; value: number } | { kind: 'above'; value: number } | { kind: 'positive' } | { kind: 'info' };

export interface ReportRow {
  id: keyof ChaosFigures;
  label: string;
  value: number;
  requirement: Requirement;
  ok: boolean;
}

export interface ChaosReport {
  seed: number;
  preset: string;
  command: string;
  durationSeconds: number;
  config: ChaosConfig;
  figures: ChaosFigures;
  rows: ReportRow[];
  ok: boolean;
  /** Why a check failed, with sample keys; crashed workers' last output; faults not carried out. */
  problems: string[];
}

const meets = (requirement: Requirement, value: number): boolean => {
  switch (requirement.kind) {
    case 'zero':
      return value === 0;
    case 'equals':
      return value === requirement.value;
    case 'above':
      return value > requirement.value;
    case 'positive':
      return value > 0;
    case 'info':
      return true;
  }
};

const sample = (keys: Iterable<string>): string => [...keys].slice(0, 5).join(', ');

/** Computes every figure from the evidence and the fault records; lists what went wrong. */
export const computeFigures = (config: ChaosConfig, evidence: ChaosEvidence, faults: FaultRecords): { figures: ChaosFigures; problems: string[] } => {
  const problems: string[] = [...faults.problems];
  const leaseByKey = new Map(evidence.leases.map((row) => [row.lockKey, row]));
  const events = evidence.workers.flatMap((worker) => worker.events.map((event) => ({ worker, event })));

  // Who completed each run: every owner runExclusive reported success to, and the row's owner.
  const completers = new Map<string, Set<number>>();
  const addCompleter = (key: string, token: number): void => {
    const set = completers.get(key) ?? new Set<number>();
    set.add(token);
    completers.set(key, set);
  };
  for (const { event } of events) if (event.type === 'success') addCompleter(event.key, event.fencingToken);
  for (const row of evidence.leases) if (row.status === 'SUCCESS') addCompleter(row.lockKey, row.fencingToken);
  const doubles = [...completers].filter(([, tokens]) => tokens.size > 1).map(([key]) => key);
  if (doubles.length > 0) problems.push(`double SUCCESS: ${sample(doubles)}`);

  const success = evidence.leases.filter((row) => row.status === 'SUCCESS');
  const duplicated = [...evidence.effectsPerResource].filter(([, rows]) => rows > 1).map(([resource]) => resource);
  if (duplicated.length > 0) problems.push(`side-effect rows > 1: ${sample(duplicated)}`);
  const withoutEffect = success.filter((row) => !evidence.effectsPerResource.has(resourceOf(row.code, row.runKey)));
  if (withoutEffect.length > 0) problems.push(`SUCCESS without side effect: ${sample(withoutEffect.map((row) => row.lockKey))}`);

  // Replays what each resource accepted: tokens must only ever grow, and never pass the lease's.
  const leaseByResource = new Map(evidence.leases.map((row) => [resourceOf(row.code, row.runKey), row]));
  const highest = new Map<string, number>();
  const staleAccepted: string[] = [];
  let superseded = 0;
  for (const entry of evidence.fenceLog) {
    const before = highest.get(entry.resource) ?? 0;
    const lease = leaseByResource.get(entry.resource);
    if (entry.fencingToken <= before || !lease || entry.fencingToken > lease.fencingToken) staleAccepted.push(entry.resource);
    highest.set(entry.resource, Math.max(before, entry.fencingToken));
    if (entry.leaseToken !== null && entry.fencingToken < entry.leaseToken) superseded++;
  }
  if (staleAccepted.length > 0) problems.push(`fenced writes accepted from a stale token: ${sample(staleAccepted)}`);
  const notByCompleter = success.filter((row) => evidence.resourceFence.get(resourceOf(row.code, row.runKey)) !== row.fencingToken);
  if (notByCompleter.length > 0)
    problems.push(`resource last written by another owner than the completing one: ${sample(notByCompleter.map((row) => row.lockKey))}`);

  // The paused owners: every run taken over while its owner was stopped must have ended, for
  // that owner, with an aborted signal and LostJobLeaseError, and never with its SUCCESS.
  let pausedRunsLost = 0;
  const notStopped: string[] = [];
  for (const pause of faults.pauses) {
    const worker = evidence.workers.find((candidate) => candidate.nodeId === pause.nodeId);
    for (const run of pause.held.filter((candidate) => candidate.reclaimedWhilePaused)) {
      const outcome = worker?.events.find(
        (event) => (event.type === 'success' || event.type === 'error') && event.key === run.key && event.fencingToken === run.fencingToken,
      );
      const row = leaseByKey.get(run.key);
      const completedByIt = row?.status === 'SUCCESS' && row.fencingToken === run.fencingToken;
      if (!outcome) {
        notStopped.push(`${pause.nodeId} ${run.key}: no outcome logged`);
      } else if (outcome.type === 'error' && outcome.error.name === 'LostJobLeaseError' && outcome.signalAborted && !completedByIt) {
        pausedRunsLost++;
      } else {
        notStopped.push(`${pause.nodeId} ${run.key}: ${JSON.stringify(outcome)}`);
      }
    }
  }
  if (notStopped.length > 0) problems.push(`paused owners that were not stopped: ${sample(notStopped)}`);

  const early = evidence.leases.filter((row) => row.reclaimGapMs !== null && row.leaseMs !== null && row.reclaimGapMs < row.leaseMs);
  if (early.length > 0) problems.push(`reclaimed before the lease expired: ${sample(early.map((row) => row.lockKey))}`);

  const crashed = evidence.workers.filter((worker) => worker.crashed);
  for (const worker of crashed) problems.push(`worker ${worker.nodeId} crashed (${worker.exit}):\n${worker.outputTail}`);

  const tokens = evidence.leases.map((row) => row.ownerToken).filter((token): token is string => token !== null);
  const leakedTokens = tokens.filter((token) => evidence.workers.some((worker) => worker.text.includes(token)));
  if (leakedTokens.length > 0) problems.push(`owner tokens found in worker logs: ${leakedTokens.length}`);

  const skewed = evidence.workers.filter((worker) => worker.clockSkewMs !== 0);
  const skewedBoot = skewed.flatMap((worker) => worker.events).find((event) => event.type === 'boot');
  const skewedNodes = new Set(skewed.map((worker) => worker.nodeId));
  const ownersOfSuccess = success.filter((row) => row.ownerId !== null && skewedNodes.has(row.ownerId));

  const count = (predicate: (event: (typeof events)[number]['event']) => boolean): number => events.filter(({ event }) => predicate(event)).length;
  const logicalRuns = config.codes.length * config.ticks;
  const figures: ChaosFigures = {
    logicalRuns,
    workerProcesses: evidence.workers.length,
    successRows: success.length,
    reclaimedRuns: success.filter((row) => row.attempts > 1).length,
    kills: faults.kills.length,
    pauses: faults.pauses.length,
    shortestPauseMs: faults.pauses.length > 0 ? Math.min(...faults.pauses.map((pause) => pause.pausedMs)) : 0,
    pausedRunsLost,
    backendKills: faults.backendKills,
    restarts: faults.restarts,
    skewedClockHours: skewedBoot?.type === 'boot' ? Math.round(((skewedBoot.clockMs - skewedBoot.realMs) / 3_600_000) * 10) / 10 : 0,
    skewedWorkerRuns: ownersOfSuccess.length,
    staleWritesRefused: count((event) => event.type === 'fence' && !event.accepted),
    duplicateEffectsRefused: count((event) => event.type === 'effect' && !event.inserted),
    supersededStaleWrites: superseded,
    plannedFailures: count((event) => event.type === 'error' && event.error.name === 'ChaosPlannedFailure'),
    lostLeaseErrors: count((event) => event.type === 'error' && event.error.name === 'LostJobLeaseError'),
    databaseErrorsSurvived: count(
      (event) =>
        event.type === 'sweep-error' || (event.type === 'error' && event.error.name !== 'LostJobLeaseError' && event.error.name !== 'ChaosPlannedFailure'),
    ),
    doubleSuccess: doubles.length,
    sideEffectRowsOverOne: duplicated.length,
    staleFencedWritesAccepted: staleAccepted.length,
    resourcesNotLastWrittenByCompleter: notByCompleter.length,
    successWithoutSideEffect: withoutEffect.length,
    pausedOwnersNotStopped: notStopped.length,
    earlyReclaims: early.length,
    runsNeverFinished: logicalRuns - success.length,
    workersCrashed: crashed.length,
    ownerTokensInLogs: leakedTokens.length,
  };
  return { figures, problems };
};

/** The rows of the table, in print order, with what each must be. */
export const reportRows = (config: ChaosConfig, figures: ChaosFigures): ReportRow[] => {
  const zero: Requirement = { kind: 'zero' };
  const info: Requirement = { kind: 'info' };
  const positive: Requirement = { kind: 'positive' };
  const hours = figures.skewedClockHours;
  const spec: Array<[keyof ChaosFigures, string, Requirement]> = [
    ['logicalRuns', `logical runs (${config.codes.length} codes x ${config.ticks} ticks)`, info],
    ['workerProcesses', `worker processes (${config.workers} at a time, killed ones replaced)`, info],
    ['successRows', 'SUCCESS rows', { kind: 'equals', value: figures.logicalRuns }],
    ['reclaimedRuns', 'runs that ended only after a reclaim', positive],
    ['kills', 'kills (SIGKILL of a worker mid-run)', { kind: 'equals', value: config.kills }],
    ['pauses', 'pauses (SIGSTOP longer than the lease, then SIGCONT)', { kind: 'equals', value: config.pauses }],
    ['shortestPauseMs', `shortest pause in ms (lease ${config.leaseMs} ms)`, { kind: 'above', value: config.leaseMs }],
    ['pausedRunsLost', 'paused owners that found their lease lost (aborted, LostJobLeaseError)', positive],
    ['backendKills', 'backend kills (pg_terminate_backend)', positive],
    ['restarts', 'Postgres restarts', { kind: 'equals', value: 1 }],
    ['skewedWorkerRuns', `runs completed by the worker whose clock is ${hours > 0 ? '+' : ''}${hours} h off`, info],
    ['staleWritesRefused', 'stale-token writes refused by the fence', info],
    ['duplicateEffectsRefused', 'repeated side effects refused by the idempotency key', info],
    ['supersededStaleWrites', 'stale-owner writes that landed before the new owner wrote (then overwritten)', info],
    ['plannedFailures', 'planned callback failures (FAIL, then taken over)', info],
    ['lostLeaseErrors', 'LostJobLeaseError thrown by runExclusive', info],
    ['databaseErrorsSurvived', 'database errors reported to the caller and survived', info],
    ['doubleSuccess', 'double SUCCESS', zero],
    ['sideEffectRowsOverOne', 'side-effect rows per key > 1', zero],
    ['staleFencedWritesAccepted', 'fenced writes accepted from a stale token', zero],
    ['resourcesNotLastWrittenByCompleter', 'resources last written by another than the completing owner', zero],
    ['successWithoutSideEffect', 'SUCCESS runs without their side effect', zero],
    ['pausedOwnersNotStopped', 'paused owners not stopped after losing their lease', zero],
    ['earlyReclaims', 'reclaims before the lease expired (database clock)', zero],
    ['runsNeverFinished', 'runs never finished', zero],
    ['workersCrashed', 'workers that crashed (on a database error or otherwise)', zero],
    ['ownerTokensInLogs', 'owner tokens found in worker logs', zero],
  ];
  return spec.map(([id, label, requirement]) => ({ id, label, value: figures[id], requirement, ok: meets(requirement, figures[id]) }));
};

const describeRequirement = (requirement: Requirement): string => {
  switch (requirement.kind) {
    case 'zero':
      return '0';
    case 'equals':
      return `${requirement.value}`;
    case 'above':
      return `> ${requirement.value}`;
    case 'positive':
      return '> 0';
    case 'info':
      return '';
  }
};

/** The table, as markdown that also reads well in a terminal. */
export const renderReport = (report: ChaosReport): string => {
  const header = ['figure', 'value', 'must be', 'ok'];
  const body = report.rows.map((row) => [row.label, String(row.value), describeRequirement(row.requirement), row.ok ? '' : 'FAIL']);
  const widths = header.map((title, column) => Math.max(title.length, ...body.map((cells) => cells[column].length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((cell, column) => (column === 1 ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join(' | ')} |`;
  const rule = `| ${widths.map((width, column) => (column === 1 ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width))).join(' | ')} |`;
  const { config } = report;
  return [
    `chaos run, seed ${report.seed}: ${report.ok ? 'every invariant holds' : 'FAILED'}`,
    `replay: ${report.command}`,
    `${config.workers} worker processes, ${config.codes.length} codes x ${config.ticks} ticks every ${config.tickMs} ms, ` +
      `lease ${config.leaseMs} ms, heartbeat ${config.heartbeatMs} ms, work ${config.workMinMs}-${config.workMaxMs} ms; ` +
      `${report.durationSeconds.toFixed(1)} s`,
    '',
    line(header),
    rule,
    ...body.map(line),
    ...(report.problems.length > 0 ? ['', 'problems:', ...report.problems.map((problem) => `- ${problem}`)] : []),
  ].join('\n');
};
