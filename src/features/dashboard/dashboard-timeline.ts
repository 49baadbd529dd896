import type { OccurrenceRow } from '../job-scheduler/operations/operations.sql';
import { dueInstantOf } from '../scheduling/occurrence/occurrence-keys';
import type { DueSchedule } from '../scheduling/schedule/due-schedule';

/** How an occurrence ended (or stands): the colour of its mark. */
export type OccurrenceOutcome = 'succeeded' | 'failed' | 'missed' | 'running' | 'taken-over';

/** One mark per occurrence: a due instant (all its tenants' runs together), or one runNow run. */
export interface TimelineMark {
  at: string;
  outcome: OccurrenceOutcome;
  trigger: 'schedule' | 'run-now';
  /** The run shown when the mark is opened (the worst of a per-tenant occurrence's runs). */
  runId: string;
  /** Runs behind the mark (tenants of one occurrence). */
  runs: number;
}

/** A stretch in which the schedule was due but no instance recorded any occurrence. */
export interface TimelineGap {
  from: string;
  to: string;
  /** Due instants in it that have no record. */
  occurrences: number;
}

export interface Timeline {
  from: string;
  to: string;
  marks: TimelineMark[];
  gaps: TimelineGap[];
  /** true when the span held more rows (or due instants) than are read: marks or gaps are cut. */
  truncated: boolean;
}

/** The order in which one run's outcome outweighs another's in a mark of several runs. */
const WEIGHT: Record<OccurrenceOutcome, number> = { running: 4, failed: 3, missed: 2, 'taken-over': 1, succeeded: 0 };

/** RUNNING: running; FAIL: missed when recorded so, else failed; SUCCESS: taken over after a first owner vanished, else succeeded. */
export const outcomeOf = (row: Pick<OccurrenceRow, 'status' | 'attempts' | 'outcome'>): OccurrenceOutcome => {
  if (row.status === 'RUNNING') return 'running';
  if (row.status === 'FAIL') return row.outcome === 'missed' ? 'missed' : 'failed';
  return row.attempts > 1 ? 'taken-over' : 'succeeded';
};

/** The instant a runNow key was asked: `run-now <ISO> <id>...`. */
const askedAtOf = (runKey: string): number | null => {
  const match = /^run-now (\S+) /.exec(runKey);
  const instant = match ? Date.parse(match[1]) : Number.NaN;
  return Number.isNaN(instant) ? null : instant;
};

/**
 * Marks from the recorded rows (one per due instant; one per runNow run), and the gaps: due
 * instants of the schedule in [from, to) that no row records, merged into stretches (each runs
 * to the next due instant). At most `maxDue` due instants are enumerated.
 */
export const buildTimeline = (rows: readonly OccurrenceRow[], schedule: DueSchedule, from: number, to: number, rowsCut: boolean, maxDue = 20_000): Timeline => {
  // Sorted by epoch ms (the rows come newest first). `at` is the key's own ISO 8601 text: an
  // occurrence key starts with its due instant as toISOString wrote it, a runNow key with the
  // instant asked (after "run-now ").
  const byInstant = new Map<number, TimelineMark & { instant: number }>();
  const built: Array<TimelineMark & { instant: number }> = [];
  for (const row of rows) {
    const outcome = outcomeOf(row);
    const due = dueInstantOf(row.runKey);
    if (due === null) {
      const asked = askedAtOf(row.runKey);
      if (asked !== null) built.push({ instant: asked, at: new Date(asked).toISOString(), outcome, trigger: 'run-now', runId: row.id, runs: 1 });
      continue;
    }
    const mark = byInstant.get(due);
    if (!mark) {
      const created = { instant: due, at: row.runKey.slice(0, 24), outcome, trigger: 'schedule' as const, runId: row.id, runs: 1 };
      byInstant.set(due, created);
      built.push(created);
      continue;
    }
    mark.runs++;
    if (WEIGHT[outcome] > WEIGHT[mark.outcome]) {
      mark.outcome = outcome;
      mark.runId = row.id;
    }
  }
  built.sort((a, b) => a.instant - b.instant);
  const marks: TimelineMark[] = built.map(({ at, outcome, trigger, runId, runs }) => ({ at, outcome, trigger, runId, runs }));

  const gaps: TimelineGap[] = [];
  let enumerated = 0;
  let open: TimelineGap | null = null;
  let due = schedule.next(from - 1);
  while (due !== null && due < to && enumerated < maxDue) {
    enumerated++;
    const next = schedule.next(due);
    if (byInstant.has(due)) open = null;
    else if (open) {
      open.to = new Date(Math.min(next ?? to, to)).toISOString();
      open.occurrences++;
    } else {
      open = { from: new Date(due).toISOString(), to: new Date(Math.min(next ?? to, to)).toISOString(), occurrences: 1 };
      gaps.push(open);
    }
    due = next;
  }
  const dueCut = due !== null && due < to;
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString(), marks, gaps, truncated: rowsCut || dueCut };
};
