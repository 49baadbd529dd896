import {
  DECLARED_JOBS,
  DYNAMIC_HANDLER,
  DYNAMIC_LEASE_MS,
  DYNAMIC_SCHEDULES,
  instantsBetween,
  LIBRARY_DEFAULTS,
  occurrenceId,
  runKeyOf,
  TENANTS,
} from './scheduler-chaos.catalogue';
import type { RunOutcome, RunStart } from './scheduler-chaos.protocol';

/**
 * The verdict of a scheduler chaos run, a pure function of what was recorded: the handlers' own
 * records (journals and chaos_runs), the lease table's rows, the instances' lives and the faults
 * the orchestrator injected. It never trusts the library's view of what ran: a run is a handler
 * that wrote that it started.
 *
 * Every occurrence due in the window (and every one that ran) gets one class:
 * - once: one handler execution (completed, or interrupted: killed, aborted);
 * - rerun-justified: more than one, each later one a take-over (trigger 'take-over', greater
 *   fencing token) after its predecessor's instance provably lost the lease: it was SIGKILLed,
 *   SIGSTOPped, cut from the database by the proxy or had its backends terminated, between the
 *   predecessor's start (less a lease) and the re-run's start;
 * - rerun-unjustified: any other re-run (a graceful shutdown, a clock step, nothing at all);
 * - recorded-justified: no run, and the lease row says why in a way the faults explain: missed
 *   while no instance was healthy, abandoned after its owner crashed or stalled, given back
 *   because its dynamic schedule was removed;
 * - recorded-unjustified: no run, and a row that no crash explains (dropped after a graceful
 *   hand-over, given back unrun, left RUNNING, missed while instances were up): lost, with a trace;
 * - lost-silently: no run and no row;
 * - lost-check-killed: no run and no row, where every instance healthy at the instant could not
 *   run it (busy with the previous occurrence, or its clock stepped) and every busy one, whose
 *   in-memory overlap check would have recorded it a tolerance later, was SIGKILLed before that:
 *   a known limit (README, Limits), counted apart, not a failure;
 * - success-without-run: a SUCCESS row but no handler record (the evidence is broken);
 * - unexpected-run: a run of an occurrence that was not due (a removed schedule's, long after).
 * Orthogonally, two runs of one occurrence whose active times overlap are a concurrent execution
 * (active = between start and end, less the time its process was stopped, less up to
 * WAKE_GRACE_MS after it woke if it then ended: a frozen owner learns its loss only when it runs
 * again, as README says, and work whose timer fell due meanwhile may return first; those are
 * counted apart, as frozen overlaps).
 */

export interface RunEvidence extends RunStart {
  endedMs?: number;
  outcome?: RunOutcome;
  reason?: string;
  inJournal: boolean;
  inDb: boolean;
}

export interface LeaseRow {
  code: string;
  runKey: string;
  status: 'RUNNING' | 'SUCCESS' | 'FAIL';
  data: unknown;
  lastError: unknown;
  attempts: number;
  fencingToken: number;
  ownerId: string | null;
  lockKey: string;
  modifiedMs: number;
  finishedMs: number | null;
}

export interface InstanceLife {
  nodeId: string;
  slot: number;
  proxied: boolean;
  spawnedMs: number;
  readyMs?: number;
  closingMs?: number;
  killedMs?: number;
  exitMs?: number;
  stops: { fromMs: number; toMs?: number }[];
}

export type FaultEvent =
  | { kind: 'kill'; nodeId: string; atMs: number; mode: string }
  | { kind: 'term'; nodeId: string; atMs: number; mode: string; closed: boolean; exitMs?: number }
  | { kind: 'stop'; nodeId: string; fromMs: number; toMs: number; mode: 'short' | 'long' }
  | { kind: 'outage'; nodeIds: string[]; fromMs: number; toMs: number }
  | { kind: 'backend-kill'; atMs: number; nodeIds: string[]; terminated: number }
  | { kind: 'clock-step'; nodeId: string; atMs: number; offsetMs: number };

export interface ScheduleChange {
  scheduleId: string;
  change: 'added' | 'removed';
  sentMs: number;
  doneMs: number;
}

export interface VerdictInput {
  windowFromMs: number;
  windowToMs: number;
  /** When the evidence was read: the end of a run nobody saw end. */
  collectedMs: number;
  runs: RunEvidence[];
  rows: LeaseRow[];
  instances: InstanceLife[];
  faults: FaultEvent[];
  scheduleChanges: ScheduleChange[];
}

export type OccurrenceClass =
  | 'once'
  | 'rerun-justified'
  | 'rerun-unjustified'
  | 'recorded-justified'
  | 'recorded-unjustified'
  | 'lost-silently'
  | 'lost-check-killed'
  | 'success-without-run'
  | 'unexpected-run';

export const CLASSES: readonly OccurrenceClass[] = [
  'once',
  'rerun-justified',
  'rerun-unjustified',
  'recorded-justified',
  'recorded-unjustified',
  'lost-silently',
  'lost-check-killed',
  'success-without-run',
  'unexpected-run',
];

/** The classes that fail a run. */
export const FAILING_CLASSES: ReadonlySet<OccurrenceClass> = new Set([
  'rerun-unjustified',
  'recorded-unjustified',
  'lost-silently',
  'success-without-run',
  'unexpected-run',
]);

/** Why an instance skipped an occurrence: it still ran the previous one. */
const OVERLAP = 'while it still ran the previous occurrence (overlap)';

/** After SIGCONT, how long an owner that learns its lease is lost may take to stop. */
export const WAKE_GRACE_MS = 2_000;

export interface ExpectedOccurrence {
  code: string;
  runKey: string;
  scheduledAt: number;
  /** The job's row in the report: its code, or the dynamic schedule. */
  label: string;
  leaseMs: number;
  abandoned: 'take-over' | 'drop';
  scheduleId?: string;
  tenantId?: string;
}

export interface RunSummary {
  nodeId: string;
  trigger: string;
  fencingToken: number;
  /** ms from the due instant. */
  startedAt: number;
  endedAt?: number;
  outcome: string;
}

/** What the lease row of an occurrence that did not run says. */
export type RecordKind = 'none' | 'success' | 'running' | 'missed' | 'abandoned' | 'given back' | 'failed';

export interface OccurrenceVerdict {
  id: string;
  label: string;
  code: string;
  runKey: string;
  scheduledAt: string;
  due: boolean;
  class: OccurrenceClass;
  detail: string;
  runs: RunSummary[];
  row?: { status: string; attempts: number; fencingToken: number; ownerId: string | null; data: unknown; lastError: unknown };
  concurrentPairs: number;
  frozenOverlaps: number;
  /** For occurrences that did not run: what their row says. */
  record?: RecordKind;
  /** For justified re-runs: the kinds of fault that made their owners lose them. */
  rerunCauses?: string[];
  /** For occurrences given back unrun: what their owner was doing at the instant. */
  givenBack?: string;
}

export interface VerdictFigures {
  occurrencesDue: number;
  byClass: Record<OccurrenceClass, number>;
  /** Justified re-runs by the kind of fault behind them (one re-run may count under several). */
  rerunCauses: Record<string, number>;
  /** Due occurrences given back unrun (and not justified), by what their owner was doing. */
  givenBackWhy: Record<string, number>;
  /** Due occurrences that did not run, by what their row says, justified or not. */
  unrunByRecord: Partial<Record<RecordKind, { justified: number; unjustified: number }>>;
  /** Due occurrences whose one run completed / was interrupted. */
  onceCompleted: number;
  onceInterrupted: number;
  /** Occurrences with two handler executions active at once (frozen overlaps excepted). */
  concurrent: number;
  frozenOverlaps: number;
  runs: number;
  takeOverRuns: number;
  runsMissingFromTable: number;
  runsMissingFromJournal: number;
  idempotencyKeyMismatches: number;
  runsStartedAfterShutdownBegan: number;
  runsStartedBeforeTheirInstant: number;
  /** Of those, the runs that started before their instant by their own instance's clock too (Date.now; a stepped or faked clock explains the others). */
  runsStartedBeforeTheirInstantByOwnClock: number;
}

export interface Verdict {
  figures: VerdictFigures;
  /** Per job (label): due occurrences by class, and concurrent ones. */
  byJob: Record<string, Record<OccurrenceClass | 'due' | 'concurrent', number>>;
  occurrences: OccurrenceVerdict[];
  ok: boolean;
  failures: string[];
}

/** The occurrences due in the window, and those in the grey zone of a dynamic schedule's change. */
export const expectedOccurrences = (input: Pick<VerdictInput, 'windowFromMs' | 'windowToMs' | 'scheduleChanges'>) => {
  const due: ExpectedOccurrence[] = [];
  const grey: ExpectedOccurrence[] = [];
  /** Instants of a removed schedule long after its removal: none may run. */
  const forbidden: ExpectedOccurrence[] = [];
  const { windowFromMs: from, windowToMs: to } = input;
  for (const job of DECLARED_JOBS) {
    for (const scheduledAt of instantsBetween(job.everyMs, from, to)) {
      const tenants = job.kind === 'tenant' ? TENANTS : [undefined];
      for (const tenantId of tenants) {
        due.push({
          code: job.code,
          runKey: runKeyOf(scheduledAt, { tenantId }),
          scheduledAt,
          label: job.code,
          leaseMs: job.leaseMs,
          abandoned: job.abandoned,
          ...(tenantId === undefined ? {} : { tenantId }),
        });
      }
    }
  }
  const seenWithin = LIBRARY_DEFAULTS.changePollMs + LIBRARY_DEFAULTS.dynamicClaimAheadMs + 1_000;
  for (const schedule of DYNAMIC_SCHEDULES) {
    const added = input.scheduleChanges.find((change) => change.scheduleId === schedule.id && change.change === 'added');
    const removed = input.scheduleChanges.find((change) => change.scheduleId === schedule.id && change.change === 'removed');
    for (const scheduledAt of instantsBetween(schedule.everyMs, from, to)) {
      const occurrence: ExpectedOccurrence = {
        code: DYNAMIC_HANDLER,
        runKey: runKeyOf(scheduledAt, { scheduleId: schedule.id }),
        scheduledAt,
        label: `${DYNAMIC_HANDLER} [${schedule.id}]`,
        leaseMs: DYNAMIC_LEASE_MS,
        abandoned: 'take-over',
        scheduleId: schedule.id,
        ...(schedule.tenantId === undefined ? {} : { tenantId: schedule.tenantId }),
      };
      if (schedule.addedAt !== undefined && (!added || scheduledAt < added.sentMs)) continue;
      if (added && scheduledAt < added.doneMs + LIBRARY_DEFAULTS.changePollMs + 3_000) grey.push(occurrence);
      else if (removed && scheduledAt > removed.doneMs + seenWithin) forbidden.push(occurrence);
      else if (removed && scheduledAt >= removed.sentMs - 1_000) grey.push(occurrence);
      else due.push(occurrence);
    }
  }
  return { due, grey, forbidden };
};

interface Interval {
  from: number;
  to: number;
}

const overlapMs = (a: Interval[], b: Interval[]): number => {
  let total = 0;
  for (const x of a) for (const y of b) total += Math.max(0, Math.min(x.to, y.to) - Math.max(x.from, y.from));
  return total;
};

const minus = (intervals: Interval[], cut: Interval): Interval[] =>
  intervals.flatMap((interval) => {
    if (cut.to <= interval.from || cut.from >= interval.to) return [interval];
    return [...(cut.from > interval.from ? [{ from: interval.from, to: cut.from }] : []), ...(cut.to < interval.to ? [{ from: cut.to, to: interval.to }] : [])];
  });

const describe = (value: unknown): string => {
  if (value === null || value === undefined) return 'none';
  const text = JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
};

/** Judges a chaos run's evidence. */
export const judge = (input: VerdictInput): Verdict => {
  const lives = new Map(input.instances.map((life) => [life.nodeId, life]));
  const stopsOf = (nodeId: string): Interval[] => (lives.get(nodeId)?.stops ?? []).map((stop) => ({ from: stop.fromMs, to: stop.toMs ?? input.collectedMs }));

  /** When a run stopped running: its recorded end, else its process's end (a kill), else the collection. */
  const endOf = (run: RunEvidence): number => {
    if (run.endedMs !== undefined) return run.endedMs;
    const life = lives.get(run.nodeId);
    return life?.killedMs ?? life?.exitMs ?? input.collectedMs;
  };

  /** The time a run's handler could execute, and whether a wake grace was taken off it. */
  const activeOf = (run: RunEvidence): { intervals: Interval[]; frozen: boolean } => {
    const end = endOf(run);
    let intervals: Interval[] = [{ from: run.startedMs, to: Math.max(run.startedMs, end) }];
    let frozen = false;
    for (const stop of stopsOf(run.nodeId)) {
      if (stop.to <= run.startedMs || stop.from >= end) continue;
      intervals = minus(intervals, stop);
      // Woken to a lost lease: it runs until it notices (its signal aborts), or until work whose
      // timer fell due while it was stopped returns first; briefly either way. No scheduler can
      // stop a frozen process; fencing tokens protect what it writes then (README, Limits).
      if (run.endedMs !== undefined && run.endedMs - stop.to <= WAKE_GRACE_MS && run.endedMs >= stop.to) {
        intervals = minus(intervals, { from: stop.to, to: run.endedMs });
        frozen = true;
      }
    }
    return { intervals, frozen };
  };

  /** Faults at this instance, in [from, to], that make it lose its leases. */
  const leaseLosses = (nodeId: string, from: number, to: number): string[] => {
    const causes: string[] = [];
    for (const fault of input.faults) {
      switch (fault.kind) {
        case 'kill':
          if (fault.nodeId === nodeId && fault.atMs >= from && fault.atMs <= to) causes.push(`SIGKILL (${fault.mode})`);
          break;
        case 'stop':
          if (fault.nodeId === nodeId && fault.fromMs <= to && fault.toMs >= from) causes.push(`SIGSTOP ${fault.toMs - fault.fromMs} ms`);
          break;
        case 'outage':
          if (fault.nodeIds.includes(nodeId) && fault.fromMs <= to && fault.toMs >= from) causes.push(`proxy cut ${fault.toMs - fault.fromMs} ms`);
          break;
        case 'backend-kill':
          if (fault.nodeIds.includes(nodeId) && fault.atMs >= from && fault.atMs <= to) causes.push('backends terminated');
          break;
        default:
          break;
      }
    }
    return causes;
  };

  /** Other events at this instance in [from, to]: context for what is not justified. */
  const otherEvents = (nodeId: string, from: number, to: number): string[] =>
    input.faults.flatMap((fault) => {
      if (fault.kind === 'term' && fault.nodeId === nodeId && fault.atMs >= from && fault.atMs <= to) return [`SIGTERM (${fault.mode})`];
      if (fault.kind === 'clock-step' && fault.nodeId === nodeId && fault.atMs >= from && fault.atMs <= to) return [`clock step ${fault.offsetMs} ms`];
      return [];
    });

  const healthyAt = (life: InstanceLife, at: number): boolean => {
    if (life.readyMs === undefined || life.readyMs > at) return false;
    const gone = Math.min(life.closingMs ?? Infinity, life.killedMs ?? Infinity, life.exitMs ?? Infinity);
    if (at >= gone) return false;
    if (life.stops.some((stop) => stop.fromMs <= at && (stop.toMs ?? Infinity) > at)) return false;
    return !(
      life.proxied && input.faults.some((fault) => fault.kind === 'outage' && fault.nodeIds.includes(life.nodeId) && fault.fromMs <= at && fault.toMs > at)
    );
  };
  const healthyCountAt = (at: number): number => input.instances.filter((life) => healthyAt(life, at)).length;

  /**
   * Whether an instance had time to see a change made at `fromMs` by `toMs`: it booted after it
   * (it read the table), or it was up and reachable for a change poll and more in between.
   */
  const couldHaveSeen = (nodeId: string, fromMs: number, toMs: number): boolean => {
    const life = lives.get(nodeId);
    if (!life || life.spawnedMs >= fromMs) return true;
    let blind = 0;
    for (const stop of life.stops) blind += overlapMs([{ from: stop.fromMs, to: stop.toMs ?? toMs }], [{ from: fromMs, to: toMs }]);
    if (life.proxied) {
      for (const fault of input.faults) {
        if (fault.kind === 'outage' && fault.nodeIds.includes(nodeId))
          blind += overlapMs([{ from: fault.fromMs, to: fault.toMs }], [{ from: fromMs, to: toMs }]);
      }
    }
    // A terminated pool connection fails the change poll that used it: seen one poll later.
    for (const fault of input.faults) {
      if (fault.kind === 'backend-kill' && fault.nodeIds.includes(nodeId) && fault.atMs >= fromMs - LIBRARY_DEFAULTS.changePollMs && fault.atMs <= toMs) {
        blind += LIBRARY_DEFAULTS.changePollMs;
      }
    }
    return toMs - fromMs - blind >= LIBRARY_DEFAULTS.changePollMs + 2_000;
  };

  const { due, grey, forbidden } = expectedOccurrences(input);
  const expected = new Map<string, { occurrence: ExpectedOccurrence; due: boolean; forbidden: boolean }>();
  for (const occurrence of due) expected.set(occurrenceId(occurrence), { occurrence, due: true, forbidden: false });
  for (const occurrence of grey) expected.set(occurrenceId(occurrence), { occurrence, due: false, forbidden: false });
  for (const occurrence of forbidden) expected.set(occurrenceId(occurrence), { occurrence, due: false, forbidden: true });

  const runsOf = new Map<string, RunEvidence[]>();
  for (const run of input.runs) {
    if (run.scheduledAt < input.windowFromMs || run.scheduledAt > input.windowToMs) continue;
    const id = occurrenceId(run);
    runsOf.set(id, [...(runsOf.get(id) ?? []), run]);
  }
  const rowOf = new Map(input.rows.map((row) => [occurrenceId(row), row]));

  const occurrences: OccurrenceVerdict[] = [];
  let idempotencyKeyMismatches = 0;
  const ids = new Set([...[...expected.entries()].filter(([, entry]) => entry.due).map(([id]) => id), ...runsOf.keys()]);
  for (const [id, entry] of expected) if (!entry.due && rowOf.has(id) && !ids.has(id) && !entry.forbidden) ids.add(id);

  for (const id of ids) {
    const entry = expected.get(id);
    const runs = [...(runsOf.get(id) ?? [])].sort((a, b) => a.startedMs - b.startedMs);
    const row = rowOf.get(id);
    const first = runs[0];
    const code = entry?.occurrence.code ?? first?.code ?? '';
    const runKey = entry?.occurrence.runKey ?? first?.runKey ?? '';
    const scheduledAt = entry?.occurrence.scheduledAt ?? first?.scheduledAt ?? 0;
    const leaseMs = entry?.occurrence.leaseMs ?? DYNAMIC_LEASE_MS;
    if (row) for (const run of runs) if (run.idempotencyKey !== row.lockKey) idempotencyKeyMismatches++;

    let cls: OccurrenceClass;
    let detail: string;
    let record: RecordKind | undefined;
    let rerunCauses: string[] | undefined;
    let cause: string | undefined;
    const removal = entry?.forbidden
      ? input.scheduleChanges.find((change) => change.scheduleId === entry.occurrence.scheduleId && change.change === 'removed')
      : undefined;
    const seenBy = removal ? runs.filter((run) => couldHaveSeen(run.nodeId, removal.doneMs, run.startedMs)) : [];
    if (!entry || (entry.forbidden && seenBy.length > 0)) {
      cls = 'unexpected-run';
      detail = entry
        ? `ran on ${seenBy.map((run) => run.nodeId).join(', ')}, which had been up long enough to see its schedule's removal`
        : 'ran, but no schedule makes it due';
    } else if (entry.forbidden) {
      cls = 'once';
      detail = `ran after its schedule's removal, on ${runs.map((run) => run.nodeId).join(', ')}, which could not have seen it yet (stopped or cut off)`;
    } else if (runs.length === 0) {
      ({ cls, detail, record, cause } = judgeUnrun(row, entry.occurrence));
    } else if (runs.length === 1) {
      cls = 'once';
      detail = `${first.outcome ?? (lives.get(first.nodeId)?.killedMs !== undefined ? 'killed' : 'cut off')} on ${first.nodeId} (${first.trigger})`;
    } else {
      // Owner after owner, by fencing token: each later one must be a take-over of a lease its
      // predecessor provably lost, and must start after it (a stale owner starting later ran
      // under a lease it had lost).
      const problems: string[] = [];
      const causes: string[] = [];
      const rerunKinds = new Set<string>();
      const owners = [...runs].sort((a, b) => a.fencingToken - b.fencingToken || a.startedMs - b.startedMs);
      for (let index = 1; index < owners.length; index++) {
        const [before, after] = [owners[index - 1], owners[index]];
        const name = `${after.nodeId} (token ${after.fencingToken})`;
        if (after.fencingToken === before.fencingToken)
          problems.push(`${before.nodeId} and ${after.nodeId} ran with the same fencing token ${after.fencingToken}`);
        if (after.trigger !== 'take-over') problems.push(`${name} ran with trigger '${after.trigger}', not 'take-over'`);
        if (before.startedMs > after.startedMs && frozenStart(before)) {
          // Its process was stopped between its lease's last proof and its handler's first line
          // (the check and the call are one synchronous step; a SIGSTOP lands anywhere): it woke
          // up starting, and was told to stop at once. Only fencing protects from that, as README says.
          causes.push(
            `${before.nodeId}: frozen between its lease's proof and its handler's start, aborted ${(before.endedMs as number) - before.startedMs} ms after it woke`,
          );
          rerunKinds.add('frozen start');
        } else if (before.startedMs > after.startedMs) {
          problems.push(
            `${before.nodeId} (token ${before.fencingToken}) started ${before.startedMs - after.startedMs} ms after ${name}: it ran under a lease already taken from it`,
          );
        }
        const from = Math.min(before.startedMs, after.startedMs) - leaseMs;
        const to = Math.max(before.startedMs, after.startedMs);
        if (before.outcome === 'completed' && before.endedMs !== undefined && before.endedMs <= after.startedMs) {
          // Its handler returned before the take-over began: the run was over, only its
          // completion can have failed to reach the table (README: complete is one attempt).
          const atEnd = leaseLosses(before.nodeId, before.endedMs - 1_000, before.endedMs + 6_000);
          if (atEnd.length > 0) {
            causes.push(`${before.nodeId}: its run completed, but not its lease (${[...new Set(atEnd)].join(', ')} as it completed)`);
            rerunKinds.add('completion not recorded');
          } else {
            const context = [...leaseLosses(before.nodeId, from, to), ...otherEvents(before.nodeId, from - 30_000, to)];
            problems.push(
              `${before.nodeId} (token ${before.fencingToken}) completed its run, and nothing at its instance as it completed explains ${name} running it again` +
                (context.length > 0 ? ` (it had: ${[...new Set(context)].join(', ')})` : ''),
            );
          }
          continue;
        }
        const losses = leaseLosses(before.nodeId, from, to);
        for (const loss of losses) rerunKinds.add(loss.replace(/ \d+ ms$/, '').replace(/ \(.*\)$/, ''));
        if (losses.length === 0) {
          // Context only: a clock step long before (a claim made too early) shows here too.
          const context = otherEvents(before.nodeId, from - 30_000, to);
          problems.push(
            `no crash, stall or database loss at ${before.nodeId} (token ${before.fencingToken}) before ${name} took over` +
              (context.length > 0 ? ` (it had: ${context.join(', ')})` : ''),
          );
        } else {
          causes.push(`${before.nodeId}: ${[...new Set(losses)].join(', ')}`);
        }
      }
      if (problems.length > 0) {
        const context = [
          ...new Set(
            owners.slice(0, -1).flatMap((owner) => {
              const events = [
                ...leaseLosses(owner.nodeId, owner.startedMs - leaseMs - 30_000, owners.at(-1)!.startedMs),
                ...otherEvents(owner.nodeId, owner.startedMs - leaseMs - 30_000, owners.at(-1)!.startedMs),
              ];
              return events.length > 0 ? [`${owner.nodeId}: ${[...new Set(events)].join(', ')}`] : [];
            }),
          ),
        ];
        if (context.length > 0) problems.push(`around it, ${context.join('; ')}`);
      }
      cls = problems.length === 0 ? 'rerun-justified' : 'rerun-unjustified';
      if (cls === 'rerun-justified') rerunCauses = [...rerunKinds];
      detail = problems.length === 0 ? `re-run after ${causes.join('; ')}` : problems.join('; ');
    }

    // Concurrent executions: any two runs whose active times overlap.
    let concurrentPairs = 0;
    let frozenOverlaps = 0;
    const actives = runs.map(activeOf);
    for (let a = 0; a < runs.length; a++) {
      for (let b = a + 1; b < runs.length; b++) {
        const raw = overlapMs([{ from: runs[a].startedMs, to: endOf(runs[a]) }], [{ from: runs[b].startedMs, to: endOf(runs[b]) }]);
        if (overlapMs(actives[a].intervals, actives[b].intervals) > 0) concurrentPairs++;
        else if (raw > 0) frozenOverlaps++;
      }
    }
    if (concurrentPairs > 0) detail += `; ${concurrentPairs} pair(s) of runs active at once`;

    occurrences.push({
      id,
      label: entry?.occurrence.label ?? code,
      code,
      runKey,
      scheduledAt: new Date(scheduledAt).toISOString(),
      due: entry?.due ?? false,
      class: cls,
      detail,
      runs: runs.map((run) => ({
        nodeId: run.nodeId,
        trigger: run.trigger,
        fencingToken: run.fencingToken,
        startedAt: run.startedMs - scheduledAt,
        ...(run.endedMs === undefined ? {} : { endedAt: run.endedMs - scheduledAt }),
        outcome: run.outcome ? `${run.outcome}${run.reason ? ` (${run.reason})` : ''}` : lives.get(run.nodeId)?.killedMs !== undefined ? 'killed' : 'no end',
      })),
      ...(row
        ? {
            row: { status: row.status, attempts: row.attempts, fencingToken: row.fencingToken, ownerId: row.ownerId, data: row.data, lastError: row.lastError },
          }
        : {}),
      concurrentPairs,
      frozenOverlaps,
      ...(record ? { record } : {}),
      ...(rerunCauses ? { rerunCauses } : {}),
      ...(cause ? { givenBack: cause } : {}),
    });
  }

  /**
   * A start that happened as its process woke from a SIGSTOP (within WAKE_GRACE_MS of the
   * SIGCONT) and was aborted within WAKE_GRACE_MS: the process froze after the library's last
   * check of the lease and before the handler's first line.
   */
  function frozenStart(run: RunEvidence): boolean {
    const life = lives.get(run.nodeId);
    // The SIGCONT's instant is taken as it is sent: the woken process may journal a moment before.
    const woke = life?.stops.some((stop) => stop.toMs !== undefined && stop.fromMs < run.startedMs && Math.abs(run.startedMs - stop.toMs) <= WAKE_GRACE_MS);
    return !!woke && run.outcome === 'aborted' && run.endedMs !== undefined && run.endedMs - run.startedMs <= WAKE_GRACE_MS;
  }

  /** Every fault at this instance around an instant, for the detail of what is not justified. */
  function around(nodeId: string | null, at: number): string {
    if (!nodeId) return '';
    const events = [...new Set([...leaseLosses(nodeId, at - 15_000, at + 15_000), ...otherEvents(nodeId, at - 15_000, at + 15_000)])];
    return events.length > 0 ? ` (within 15 s of the instant ${nodeId} had: ${events.join(', ')})` : '';
  }

  /**
   * Why nobody ran or recorded an occurrence, when the cause is the known limit: every instance
   * healthy at its instant could not run it, and each busy one (whose in-memory overlap check
   * records it one tolerance later) was SIGKILLed before that check. Null otherwise.
   */
  function checkerKilled(occurrence: ExpectedOccurrence): string | null {
    const at = occurrence.scheduledAt;
    const reasons = input.instances.filter((life) => healthyAt(life, at)).map((life) => ({ life, why: whyNotRun(life.nodeId, occurrence) }));
    const busy = reasons.filter((reason) => reason.why === OVERLAP);
    const checkAt = at + LIBRARY_DEFAULTS.lateToleranceMs + 1_000;
    if (busy.length === 0 || reasons.some((reason) => reason.why === null)) return null;
    if (!busy.every(({ life }) => life.killedMs !== undefined && life.killedMs >= at && life.killedMs < checkAt)) return null;
    return reasons
      .map(({ life, why }) => `${life.nodeId} ${why}${why === OVERLAP ? `, SIGKILLed ${(life.killedMs as number) - at} ms after it` : ''}`)
      .join('; ');
  }

  /** What the owner of an occurrence it gave back was doing at the instant, as far as the evidence tells. */
  function whyGivenBack(owner: string | null, occurrence: ExpectedOccurrence): string {
    return whyNotRun(owner, occurrence) ?? 'for no reason the evidence shows';
  }

  /** Why an instance could not run an occurrence at its instant (busy with the previous one, stalled, a stepped clock), or null. */
  function whyNotRun(owner: string | null, occurrence: ExpectedOccurrence): string | null {
    const at = occurrence.scheduledAt;
    const prefix = occurrence.scheduleId === undefined ? undefined : `schedule=${encodeURIComponent(occurrence.scheduleId)} `;
    // On its own clock (a stepped one reaches the instant early): the offset its run recorded.
    const busy = input.runs.some((run) => {
      if (run.nodeId !== owner || run.code !== occurrence.code || run.scheduledAt >= at) return false;
      if (prefix !== undefined && !run.runKey.startsWith(prefix)) return false;
      const offset = run.wallStartedMs - run.startedMs;
      return run.startedMs + offset <= at + 50 && endOf(run) + offset > at - 50;
    });
    if (busy) return OVERLAP;
    const life = owner ? lives.get(owner) : undefined;
    if (life?.stops.some((stop) => stop.fromMs < at && (stop.toMs ?? Infinity) > at - 3_000)) return 'after a SIGSTOP across its instant';
    if (input.faults.some((fault) => fault.kind === 'clock-step' && fault.nodeId === owner && Math.abs(fault.atMs - at) <= 60_000)) {
      return 'after a wall-clock step';
    }
    return null;
  }

  function judgeUnrun(row: LeaseRow | undefined, occurrence: ExpectedOccurrence): { cls: OccurrenceClass; detail: string; record: RecordKind; cause?: string } {
    const at = occurrence.scheduledAt;
    if (!row) {
      const checkKilled = checkerKilled(occurrence);
      if (checkKilled) return { cls: 'lost-check-killed', detail: `no run and no row: ${checkKilled}`, record: 'none' };
      return { cls: 'lost-silently', detail: `no run and no row; ${healthyCountAt(at)} instance(s) healthy at the instant`, record: 'none' };
    }
    if (row.status === 'SUCCESS') return { cls: 'success-without-run', detail: `SUCCESS by ${row.ownerId} without any handler record`, record: 'success' };
    const removal = input.scheduleChanges.find((change) => change.scheduleId === occurrence.scheduleId && change.change === 'removed');
    if (removal && (row.status === 'RUNNING' || (row.data as { abandoned?: unknown } | null)?.abandoned === true)) {
      // Its holder vanished, and the schedule was removed before a take-over scan could run it
      // again: README, "no instance starts an occurrence of it once it has seen the change".
      const takeOverBy = row.modifiedMs + occurrence.leaseMs + LIBRARY_DEFAULTS.takeOverScanMs + 5_000;
      const losses = leaseLosses(row.ownerId ?? '', at - occurrence.leaseMs, removal.sentMs);
      // Or its holder handed it over (a graceful shutdown) and the take-over found the schedule
      // removed: ended JOB_SCHEDULE_REMOVED, as the same README rule says.
      const endedAsRemoved = (row.data as { error?: { code?: unknown } } | null)?.error?.code === 'JOB_SCHEDULE_REMOVED';
      if (removal.sentMs <= takeOverBy && (losses.length > 0 || endedAsRemoved)) {
        const why = losses.length > 0 ? `its holder ${row.ownerId} lost it (${[...new Set(losses)].join(', ')})` : `its holder ${row.ownerId} handed it over`;
        return {
          cls: 'recorded-justified',
          detail: `${why} and its schedule was removed before a take-over`,
          record: row.status === 'RUNNING' ? 'running' : 'abandoned',
        };
      }
    }
    if (row.status === 'RUNNING') {
      return {
        cls: 'recorded-unjustified',
        detail: `left RUNNING by ${row.ownerId} (attempts ${row.attempts}), never run, not taken over by the end${around(row.ownerId, at)}`,
        record: 'running',
      };
    }
    const data = (row.data ?? {}) as { outcome?: unknown; abandoned?: unknown; released?: unknown; reason?: unknown; error?: { code?: unknown } };
    if (data.outcome === 'missed') {
      const healthy = healthyCountAt(at);
      return healthy === 0
        ? { cls: 'recorded-justified', detail: 'missed while no instance was healthy', record: 'missed' }
        : {
            cls: 'recorded-unjustified',
            detail: `recorded missed by ${row.ownerId} while ${healthy} instance(s) were healthy at the instant${around(row.ownerId, at)}`,
            record: 'missed',
          };
    }
    if (data.abandoned === true || data.error?.code === 'JOB_ABANDONED') {
      const owner = row.ownerId ?? '';
      const claimAhead = Math.max(LIBRARY_DEFAULTS.claimAheadMs, LIBRARY_DEFAULTS.dynamicClaimAheadMs);
      const from = at - claimAhead - occurrence.leaseMs - 2_000;
      const to = row.finishedMs ?? row.modifiedMs;
      const losses = leaseLosses(owner, from, to);
      if (losses.length > 0 && occurrence.abandoned === 'take-over' && row.attempts < LIBRARY_DEFAULTS.maxAttempts) {
        // A take-over job ends an occurrence unrun after a crash only past maxAttempts owners, or
        // when no instance could take it over within the late tolerance (the fleet was down).
        const expired = row.modifiedMs;
        let fewest = Infinity;
        for (let at = expired; at <= expired + LIBRARY_DEFAULTS.lateToleranceMs; at += 1_000) fewest = Math.min(fewest, healthyCountAt(at));
        if (fewest > 0) {
          return {
            cls: 'recorded-unjustified',
            detail:
              `abandoned unrun (take-over, attempts ${row.attempts} of ${LIBRARY_DEFAULTS.maxAttempts}) after ${owner}: ${[...new Set(losses)].join(', ')}, ` +
              `although at least ${fewest} instance(s) were up throughout the late tolerance after its last write: never taken over`,
            record: 'abandoned',
          };
        }
      }
      if (losses.length > 0) {
        return {
          cls: 'recorded-justified',
          detail: `abandoned unrun (${occurrence.abandoned}) after ${owner}: ${[...new Set(losses)].join(', ')}`,
          record: 'abandoned',
        };
      }
      const context = otherEvents(owner, from, to);
      return {
        cls: 'recorded-unjustified',
        detail:
          `abandoned unrun (${occurrence.abandoned}, attempts ${row.attempts}) although its owner ${owner} neither crashed nor stalled` +
          (context.length > 0 ? ` (it had: ${context.join(', ')})` : ''),
        record: 'abandoned',
      };
    }
    if (data.outcome === 'skipped-overlap') {
      // Recorded by an instance that skipped it as overlapping, one tolerance later (or at its
      // stop) when nobody had claimed it: justified when no instance healthy at the instant could run it.
      const healthy = input.instances.filter((life) => healthyAt(life, at));
      const reasons = healthy.map((life) => ({ nodeId: life.nodeId, why: whyNotRun(life.nodeId, occurrence) }));
      const able = reasons.filter((reason) => reason.why === null).map((reason) => reason.nodeId);
      const detail = reasons.map((reason) => `${reason.nodeId} ${reason.why ?? 'idle'}`).join('; ');
      return able.length === 0
        ? { cls: 'recorded-justified', detail: `skipped as overlapping: no healthy instance could run it (${detail || 'none healthy'})`, record: 'failed' }
        : {
            cls: 'recorded-unjustified',
            detail: `recorded skipped-overlap by ${row.ownerId} although ${able.join(', ')} could run it (${detail})`,
            record: 'failed',
          };
    }
    if (data.released === true) {
      const why = whyGivenBack(row.ownerId, occurrence);
      const removed =
        occurrence.scheduleId !== undefined &&
        input.scheduleChanges.some((change) => change.scheduleId === occurrence.scheduleId && change.change === 'removed') &&
        (data.reason === 'schedule removed' || data.reason === 'schedule changed');
      return removed
        ? { cls: 'recorded-justified', detail: `given back: ${String(data.reason)}`, record: 'given back' }
        : {
            cls: 'recorded-unjustified',
            detail: `given back unrun by ${row.ownerId} (${describe(data.reason)}) ${why}, and nobody ran it${around(row.ownerId, at)}`,
            record: 'given back',
            cause: why,
          };
    }
    return {
      cls: 'recorded-unjustified',
      detail: `FAIL unrun by ${row.ownerId}: data ${describe(row.data)}, lastError ${describe(row.lastError)}${around(row.ownerId, at)}`,
      record: 'failed',
    };
  }

  const byClass = Object.fromEntries(CLASSES.map((cls) => [cls, 0])) as Record<OccurrenceClass, number>;
  const byJob: Verdict['byJob'] = {};
  let onceCompleted = 0;
  let onceInterrupted = 0;
  const unrunByRecord: VerdictFigures['unrunByRecord'] = {};
  const rerunCauses: Record<string, number> = {};
  const givenBackWhy: Record<string, number> = {};
  for (const occurrence of occurrences) {
    // Grey occurrences (a dynamic schedule changing) count only for what no change excuses.
    const counted = occurrence.due || occurrence.class === 'unexpected-run' || occurrence.class === 'rerun-unjustified' || occurrence.concurrentPairs > 0;
    if (!counted) continue;
    byClass[occurrence.class]++;
    const job = (byJob[occurrence.label] ??= Object.fromEntries([...CLASSES, 'due', 'concurrent'].map((key) => [key, 0])) as Verdict['byJob'][string]);
    if (occurrence.due) job.due++;
    job[occurrence.class]++;
    if (occurrence.concurrentPairs > 0) job.concurrent++;
    for (const cause of occurrence.rerunCauses ?? []) rerunCauses[cause] = (rerunCauses[cause] ?? 0) + 1;
    if (occurrence.givenBack && occurrence.due) givenBackWhy[occurrence.givenBack] = (givenBackWhy[occurrence.givenBack] ?? 0) + 1;
    if (occurrence.record) {
      const counts = (unrunByRecord[occurrence.record] ??= { justified: 0, unjustified: 0 });
      if (occurrence.class === 'recorded-justified') counts.justified++;
      else counts.unjustified++;
    }
    if (occurrence.class === 'once') {
      if (occurrence.runs[0].outcome === 'completed') onceCompleted++;
      else onceInterrupted++;
    }
  }

  const closingOf = new Map(input.instances.map((life) => [life.nodeId, life.closingMs]));
  const inWindow = input.runs.filter((run) => run.scheduledAt >= input.windowFromMs && run.scheduledAt <= input.windowToMs);
  // Started more than 100 ms before their instant by the harness's clock; of those, the ones early by their own instance's clock too.
  const early = inWindow.filter((run) => run.startedMs < run.scheduledAt - 100);
  const figures: VerdictFigures = {
    occurrencesDue: occurrences.filter((occurrence) => occurrence.due).length,
    byClass,
    rerunCauses,
    givenBackWhy,
    unrunByRecord,
    onceCompleted,
    onceInterrupted,
    concurrent: occurrences.filter((occurrence) => occurrence.concurrentPairs > 0).length,
    frozenOverlaps: occurrences.reduce((sum, occurrence) => sum + occurrence.frozenOverlaps, 0),
    runs: inWindow.length,
    takeOverRuns: inWindow.filter((run) => run.trigger === 'take-over').length,
    runsMissingFromTable: inWindow.filter((run) => !run.inDb).length,
    runsMissingFromJournal: inWindow.filter((run) => !run.inJournal).length,
    idempotencyKeyMismatches,
    runsStartedAfterShutdownBegan: inWindow.filter((run) => {
      const closing = closingOf.get(run.nodeId);
      return closing !== undefined && run.startedMs > closing + 100;
    }).length,
    runsStartedBeforeTheirInstant: early.length,
    runsStartedBeforeTheirInstantByOwnClock: early.filter((run) => run.wallStartedMs < run.scheduledAt - 100).length,
  };

  const failures: string[] = [];
  for (const cls of CLASSES) if (FAILING_CLASSES.has(cls) && byClass[cls] > 0) failures.push(`${byClass[cls]} occurrence(s) ${cls}`);
  if (figures.concurrent > 0) failures.push(`${figures.concurrent} occurrence(s) with concurrent executions`);
  if (idempotencyKeyMismatches > 0) failures.push(`${idempotencyKeyMismatches} run(s) whose idempotencyKey is not their row's lockKey`);
  if (figures.runsMissingFromJournal > 0) failures.push(`${figures.runsMissingFromJournal} run(s) in chaos_runs but not in a journal (evidence broken)`);
  return { figures, byJob, occurrences, ok: failures.length === 0, failures };
};
