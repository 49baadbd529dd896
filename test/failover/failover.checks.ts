import type { ErrorSummary, LoggedEvent } from './failover.protocol';

/**
 * The invariants of the failover proof, computed from what the nodes were told (their event
 * logs) and what the cluster kept (the final lease table, read through HAProxy). Pure: the unit
 * tests feed it small hand-made event lists that each break one invariant.
 */

export interface FinalRow {
  runKey: string;
  id: string;
  status: string;
  fencingToken: number;
  attempts: number;
  ownerId: string | null;
}

export interface NodeEvidence {
  nodeId: string;
  events: LoggedEvent[];
}

export interface CheckInput {
  /** Run keys of every tick the nodes were asked to run. */
  plannedTicks: string[];
  nodes: NodeEvidence[];
  finalRows: FinalRow[];
}

export interface FailoverFigures {
  ticksPlanned: number;
  ticksCompleted: number;
  lostTicks: number;
  forgottenAcquisitions: number;
  forgottenCompletions: number;
  overlappingRuns: number;
  reExecutions: number;
  abortedWhileValid: number;
  totalAborts: number;
  fencingViolations: number;
  acquisitions: number;
  /** Acquisitions that took over an existing row (attempt > 1). */
  reclaims: number;
  /** Ticks a node stopped trying at the horizon without a definite answer. */
  ticksGivenUp: number;
  /** Callbacks that started and never reported their end. */
  unfinishedCallbacks: number;
  runExclusiveErrors: number;
  /** `phase: name code <- cause` → count. */
  runExclusiveErrorsByKind: Record<string, number>;
  abortReasons: Record<string, number>;
  /** Every code found in an error chain (attempt errors and abort reasons) → count. */
  codesSeen: Record<string, number>;
}

export interface CheckResult {
  figures: FailoverFigures;
  /** A few examples of each violation, for the report. */
  problems: string[];
}

/**
 * A takeover is logged by its new owner a few milliseconds after it committed; the old owner's
 * heartbeat may log the abort it causes a little before that line. An acquisition logged up to
 * this long after an abort still explains it.
 */
export const ABORT_EXPLAINED_WITHIN_MS = 250;

interface Acquisition {
  nodeId: string;
  acq: number;
  tick: string;
  at: number;
  id: string;
  fencingToken: number;
  attempt: number;
}

interface Callback {
  key: string;
  tick: string;
  start: number;
  end: number | undefined;
}

const keyOf = (nodeId: string, acq: number): string => `${nodeId}#${acq}`;

const increment = (record: Record<string, number>, key: string, by = 1): void => {
  record[key] = (record[key] ?? 0) + by;
};

const describeCode = (name: string, code: string | undefined, message: string): string =>
  code === undefined ? `${name} "${message.split('\n')[0].slice(0, 60)}"` : `${name} ${code}`;

/** `name code <- cause name code`: what a caller of runExclusive would switch on. */
export const errorKind = (error: ErrorSummary): string => {
  const cause = error.causes?.[0];
  const own = describeCode(error.name, error.code, error.message);
  return cause ? `${own} <- ${describeCode(cause.name, cause.code, cause.message)}` : own;
};

const groupByTick = <T extends { tick: string }>(items: T[]): Map<string, T[]> => {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(item.tick) ?? [];
    group.push(item);
    groups.set(item.tick, group);
  }
  return groups;
};

const sample = (items: string[]): string => items.slice(0, 5).join('; ') + (items.length > 5 ? `; and ${items.length - 5} more` : '');

export const computeFailoverFigures = (input: CheckInput): CheckResult => {
  const problems: string[] = [];
  const rowByTick = new Map(input.finalRows.map((row) => [row.runKey, row]));
  const acquisitions: Acquisition[] = [];
  const callbacks = new Map<string, Callback>();
  const completions: Array<{ nodeId: string; acq: number; tick: string; at: number }> = [];
  const aborts: Array<{ nodeId: string; acq: number; tick: string; at: number; reason: ErrorSummary }> = [];
  const runExclusiveErrorsByKind: Record<string, number> = {};
  const abortReasons: Record<string, number> = {};
  const codesSeen: Record<string, number> = {};
  let runExclusiveErrors = 0;
  let ticksGivenUp = 0;

  const noteCodes = (error: ErrorSummary): void => {
    for (const item of [error, ...(error.causes ?? [])]) if (item.code !== undefined) increment(codesSeen, item.code);
  };

  for (const { nodeId, events } of input.nodes) {
    for (const event of events) {
      switch (event.type) {
        case 'acquired':
          acquisitions.push({ nodeId, acq: event.acq, tick: event.tick, at: event.at, id: event.id, fencingToken: event.fencingToken, attempt: event.attempt });
          break;
        case 'callback-start':
          callbacks.set(keyOf(nodeId, event.acq), { key: keyOf(nodeId, event.acq), tick: event.tick, start: event.at, end: undefined });
          break;
        case 'callback-end': {
          const callback = callbacks.get(keyOf(nodeId, event.acq));
          if (callback) callback.end = event.at;
          break;
        }
        case 'completed':
          completions.push({ nodeId, acq: event.acq, tick: event.tick, at: event.at });
          break;
        case 'abort':
          aborts.push({ nodeId, acq: event.acq, tick: event.tick, at: event.at, reason: event.reason });
          increment(abortReasons, errorKind(event.reason));
          noteCodes(event.reason);
          break;
        case 'attempt-error':
          runExclusiveErrors++;
          increment(runExclusiveErrorsByKind, `${event.phase}: ${errorKind(event.error)}`);
          noteCodes(event.error);
          break;
        case 'gave-up':
          ticksGivenUp++;
          break;
        default:
          break;
      }
    }
  }

  // Each tick's acquisitions in the order they happened (ties: the lower fencing token first).
  const acquisitionsByTick = groupByTick(acquisitions);
  for (const group of acquisitionsByTick.values()) group.sort((a, b) => a.at - b.at || a.fencingToken - b.fencingToken);
  const acquisitionByKey = new Map(acquisitions.map((acquisition) => [keyOf(acquisition.nodeId, acquisition.acq), acquisition]));

  const completed = input.plannedTicks.filter((tick) => rowByTick.get(tick)?.status === 'SUCCESS');
  const lost = input.plannedTicks.filter((tick) => rowByTick.get(tick)?.status !== 'SUCCESS');
  if (lost.length > 0) problems.push(`lost ticks (no SUCCESS): ${sample(lost.map((tick) => `${tick} ${rowByTick.get(tick)?.status ?? 'no row'}`))}`);

  // Forgotten acquisitions, and fencing tokens that did not grow.
  const forgotten: string[] = [];
  const fencing: string[] = [];
  for (const [tick, group] of acquisitionsByTick) {
    const row = rowByTick.get(tick);
    let highest = -Infinity;
    group.forEach((acquisition, index) => {
      const name = `${tick} ${acquisition.nodeId}#${acquisition.acq} (fencing ${acquisition.fencingToken})`;
      if (acquisition.fencingToken <= highest) fencing.push(`${name} after fencing ${highest}`);
      highest = Math.max(highest, acquisition.fencingToken);
      const later = group.slice(index + 1);
      const overtaken = later.find((next) => next.fencingToken <= acquisition.fencingToken || next.attempt === 1 || next.id !== acquisition.id);
      const why = overtaken
        ? `later acquired by ${overtaken.nodeId}#${overtaken.acq} with fencing ${overtaken.fencingToken}, attempt ${overtaken.attempt}`
        : !row
          ? 'no row in the final table'
          : row.id !== acquisition.id
            ? 'the final row is another row'
            : row.fencingToken < acquisition.fencingToken
              ? `the final row has fencing ${row.fencingToken}`
              : undefined;
      if (why) forgotten.push(`${name}: ${why}`);
    });
  }
  if (forgotten.length > 0) problems.push(`forgotten acquisitions: ${sample(forgotten)}`);
  if (fencing.length > 0) problems.push(`fencing tokens not strictly increasing: ${sample(fencing)}`);

  // Forgotten completions: runExclusive said SUCCESS, and the tick was acquired again or is not SUCCESS.
  const forgottenCompletions: string[] = [];
  for (const completion of completions) {
    const own = acquisitionByKey.get(keyOf(completion.nodeId, completion.acq));
    const row = rowByTick.get(completion.tick);
    const again = (acquisitionsByTick.get(completion.tick) ?? []).find((next) => next.at > completion.at);
    const why = again
      ? `acquired again by ${again.nodeId}#${again.acq}`
      : row?.status !== 'SUCCESS'
        ? `the final row is ${row?.status ?? 'missing'}`
        : own && (row.id !== own.id || row.fencingToken !== own.fencingToken)
          ? `the final SUCCESS is another acquisition's (fencing ${row.fencingToken})`
          : undefined;
    if (why) forgottenCompletions.push(`${completion.tick} ${completion.nodeId}#${completion.acq}: ${why}`);
  }
  if (forgottenCompletions.length > 0) problems.push(`forgotten completions: ${sample(forgottenCompletions)}`);

  // Overlaps and re-executions, from the callbacks' own start and end.
  const overlaps: string[] = [];
  const reExecuted: string[] = [];
  let unfinishedCallbacks = 0;
  for (const [tick, group] of groupByTick([...callbacks.values()])) {
    if (group.length > 1) reExecuted.push(`${tick} (${group.length} starts)`);
    for (const callback of group) if (callback.end === undefined) unfinishedCallbacks++;
    for (let i = 0; i < group.length; i++) {
      for (let j = i + 1; j < group.length; j++) {
        const [a, b] = [group[i], group[j]];
        if (a.start < (b.end ?? Infinity) && b.start < (a.end ?? Infinity)) overlaps.push(`${tick}: ${a.key} and ${b.key}`);
      }
    }
  }
  if (overlaps.length > 0) problems.push(`overlapping runs: ${sample(overlaps)}`);
  if (reExecuted.length > 0) problems.push(`re-executed ticks: ${sample(reExecuted)}`);

  // Aborts that no takeover explains (the application's shutdown aside).
  const unexplained: string[] = [];
  for (const abort of aborts) {
    if (abort.reason.name === 'JobShutdownError') continue;
    const own = acquisitionByKey.get(keyOf(abort.nodeId, abort.acq));
    const takeover = (acquisitionsByTick.get(abort.tick) ?? []).find(
      (other) => other !== own && other.at >= (own?.at ?? -Infinity) && other.at <= abort.at + ABORT_EXPLAINED_WITHIN_MS,
    );
    if (!takeover) unexplained.push(`${abort.tick} ${abort.nodeId}#${abort.acq}: ${errorKind(abort.reason)}`);
  }
  if (unexplained.length > 0) problems.push(`aborted while the lease was valid: ${sample(unexplained)}`);

  return {
    figures: {
      ticksPlanned: input.plannedTicks.length,
      ticksCompleted: completed.length,
      lostTicks: lost.length,
      forgottenAcquisitions: forgotten.length,
      forgottenCompletions: forgottenCompletions.length,
      overlappingRuns: overlaps.length,
      reExecutions: reExecuted.length,
      abortedWhileValid: unexplained.length,
      totalAborts: aborts.length,
      fencingViolations: fencing.length,
      acquisitions: acquisitions.length,
      reclaims: acquisitions.filter((acquisition) => acquisition.attempt > 1).length,
      ticksGivenUp,
      unfinishedCallbacks,
      runExclusiveErrors,
      runExclusiveErrorsByKind,
      abortReasons,
      codesSeen,
    },
    problems,
  };
};
