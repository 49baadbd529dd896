import type { OccurrenceOutcome, OccurrenceRow } from '../job-scheduler/operations/operations.sql';
import { dueInstantOf } from '../scheduling/occurrence/occurrence-keys';
import type { DueSchedule } from '../scheduling/schedule/due-schedule';

/** How an occurrence ended (or stands): the colour of its mark (decided by the statement that reads it). */
export type { OccurrenceOutcome };

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

/** A dense timeline's stretch [from, from + bucketMs): how many occurrences ended how. */
export interface TimelineBucket {
  from: string;
  succeeded: number;
  failed: number;
  missed: number;
  running: number;
  'taken-over': number;
  /** Due instants without any record. */
  notRun: number;
  /** runNow runs asked in it. */
  runNow: number;
  /** The run of the worst occurrence in it (null when it holds none). */
  runId: string | null;
}

export interface Timeline {
  from: string;
  to: string;
  /**
   * Marks, gaps and buckets cover [shownFrom, to): `from` unless the span held more than is read,
   * in which case the newest are kept and shownFrom says where they start (truncated: true).
   */
  shownFrom: string;
  /**
   * Gaps are never claimed before this instant: the job's first known occurrence, its
   * deployment (the schedule's creation, or this instance's start), whichever is first. null when
   * it is before `shownFrom` (no bound inside the span).
   */
  knownSince: string | null;
  /** One per occurrence; empty when the timeline is aggregated into buckets. */
  marks: TimelineMark[];
  /** Empty when the timeline is aggregated into buckets. */
  gaps: TimelineGap[];
  /** Set (with bucketMs) when the span holds too many occurrences to draw one by one. */
  buckets: TimelineBucket[] | null;
  bucketMs: number | null;
  /** true when the span held more rows (or due instants) than are read: shownFrom is after from. */
  truncated: boolean;
}

/** The order in which one run's outcome outweighs another's in a mark of several runs. */
const WEIGHT: Record<OccurrenceOutcome, number> = { running: 4, failed: 3, missed: 2, 'taken-over': 1, succeeded: 0 };

/** The instant a runNow key was asked: `run-now <ISO> <id>...`. */
const askedAtOf = (runKey: string): number | null => {
  const match = /^run-now (\S+) /.exec(runKey);
  const instant = match ? Date.parse(match[1]) : Number.NaN;
  return Number.isNaN(instant) ? null : instant;
};

/** Round bucket sizes: the smallest that makes at most MAX_BUCKETS buckets of a span is used. */
const BUCKET_SIZES_MS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400].map((s) => s * 1000);
const MAX_BUCKETS = 200;

export const bucketSizeOf = (spanMs: number): number => BUCKET_SIZES_MS.find((size) => spanMs / size <= MAX_BUCKETS) ?? 86_400_000;

/**
 * The due instants of `schedule` in [from, to), the newest `max` of them when there are more
 * (cut: true). Enumerated forward in windows walked backward from `to`, each twice as long as the
 * last (a schedule can only be stepped forward), so the cost stays near `max` steps.
 */
export const dueInstantsNewestFirst = (schedule: DueSchedule, from: number, to: number, max: number): { instants: number[]; cut: boolean } => {
  const windows: number[][] = [];
  let total = 0;
  let end = to;
  let size = 3_600_000;
  while (end > from && total < max) {
    const start = Math.max(from, end - size);
    const found: number[] = [];
    for (let due = schedule.next(start - 1); due !== null && due < end; due = schedule.next(due)) found.push(due);
    windows.unshift(found);
    total += found.length;
    end = start;
    size *= 2;
  }
  const instants = windows.flat();
  const cut = instants.length > max || (end > from && total >= max);
  return { instants: instants.length > max ? instants.slice(instants.length - max) : instants, cut };
};

export interface TimelineBounds {
  from: number;
  to: number;
  /** Rows read at most per range (due instants, runNow runs): a range that returned more was cut. */
  readLimit: number;
  /** The first known occurrence or deployment (epoch ms), or null when unknown. */
  knownSince: number | null;
  /** Due instants enumerated at most (the newest). */
  maxDue?: number;
  /** Above this many marks and missing occurrences, the timeline is drawn in buckets. */
  maxMarks?: number;
}

/** A mark while the timeline is built: its text (`at`) is only made for the marks drawn one by one. */
interface BuiltMark {
  instant: number;
  outcome: OccurrenceOutcome;
  trigger: 'schedule' | 'run-now';
  runId: string;
  runs: number;
  /** The row's runKey (a scheduled mark's `at` is its first 24 characters, as written). */
  runKey: string;
}

/** Tenants' runs of one due instant as one mark: the worst outcome shown (the first row read of that outcome). */
const absorb = (mark: BuiltMark, row: OccurrenceRow): void => {
  mark.runs++;
  if (WEIGHT[row.outcome] > WEIGHT[mark.outcome]) {
    mark.outcome = row.outcome;
    mark.runId = row.id;
  }
};

/**
 * The scheduled marks, newest first, from rows in any order: rows of one instant merged in the
 * order read. (The statement returns them newest first, each instant's rows together: the fast
 * path; this one is for any other order.)
 */
const mergedNewestFirst = (rows: readonly OccurrenceRow[]): BuiltMark[] => {
  const byInstant = new Map<number, BuiltMark>();
  for (const row of rows) {
    const due = dueInstantOf(row.runKey);
    if (due === null || Number.isNaN(due)) continue;
    const mark = byInstant.get(due);
    if (mark) absorb(mark, row);
    else byInstant.set(due, { instant: due, outcome: row.outcome, trigger: 'schedule', runId: row.id, runs: 1, runKey: row.runKey });
  }
  return [...byInstant.values()].sort((a, b) => b.instant - a.instant);
};

const RUN_NOW_KEY = 'run-now ';

/**
 * Marks from the recorded rows (one per due instant; one per runNow run, in a lower lane) and the
 * gaps (due instants in the window that no row records, merged into stretches), both over the
 * same window [shownFrom, to): when a range read more than `readLimit` rows, or the schedule had
 * more than `maxDue` due instants, only the newest are shown and shownFrom says where that starts.
 * No gap is claimed before `knownSince`. Past `maxMarks`, counts per round bucket instead.
 * Rows come newest first (as JobRunsInspector.findOccurrences returns them); any order is right,
 * that one is fast: no map of instants, one pass over the rows and one over the due instants.
 */
export const buildTimeline = (rows: readonly OccurrenceRow[], schedule: DueSchedule, bounds: TimelineBounds): Timeline => {
  const { from, to, readLimit, knownSince } = bounds;
  const maxDue = bounds.maxDue ?? 20_000;
  const maxMarks = bounds.maxMarks ?? 600;
  let scheduled: BuiltMark[] = [];
  const asked: BuiltMark[] = [];
  // Rows read per range (the due instants', the runNow keys'): a range that returned more than
  // readLimit was cut by the statement's limit.
  let scheduledRows = 0;
  let askedRows = 0;
  let inOrder = true;
  for (const row of rows) {
    const askedKey = row.runKey.startsWith(RUN_NOW_KEY);
    if (askedKey) askedRows++;
    else scheduledRows++;
    const due = askedKey ? null : dueInstantOf(row.runKey);
    if (due === null || Number.isNaN(due)) {
      const at = askedKey ? askedAtOf(row.runKey) : null;
      if (at !== null) asked.push({ instant: at, outcome: row.outcome, trigger: 'run-now', runId: row.id, runs: 1, runKey: row.runKey });
      continue;
    }
    const last = scheduled.length > 0 ? scheduled[scheduled.length - 1] : undefined;
    if (last?.instant === due) absorb(last, row);
    else {
      if (last !== undefined && due > last.instant) inOrder = false;
      scheduled.push({ instant: due, outcome: row.outcome, trigger: 'schedule', runId: row.id, runs: 1, runKey: row.runKey });
    }
  }
  if (!inOrder) scheduled = mergedNewestFirst(rows.filter((row) => !row.runKey.startsWith(RUN_NOW_KEY)));

  // A range cut by the limit: its oldest instant may be partly read (some of its tenants), so the
  // window starts just after it.
  let shownFrom = from;
  if (scheduledRows > readLimit && scheduled.length > 0) shownFrom = Math.max(shownFrom, scheduled[scheduled.length - 1].instant + 1);
  if (askedRows > readLimit && asked.length > 0) shownFrom = Math.max(shownFrom, Math.min(...asked.map((mark) => mark.instant)) + 1);

  const gapsFrom = Math.max(shownFrom, knownSince ?? Number.NEGATIVE_INFINITY);
  const due = gapsFrom < to ? dueInstantsNewestFirst(schedule, gapsFrom, to, maxDue) : { instants: [], cut: false };
  if (due.cut) shownFrom = Math.max(shownFrom, due.instants[0]);

  // Oldest first from here on.
  let oldestShown = scheduled.length;
  while (oldestShown > 0 && scheduled[oldestShown - 1].instant < shownFrom) oldestShown--;
  const recorded = scheduled.slice(0, oldestShown).reverse();
  // Due instants without a record: one walk of both ascending lists.
  const missing: Array<{ at: number; until: number }> = [];
  let next = 0;
  for (let index = 0; index < due.instants.length; index++) {
    const instant = due.instants[index];
    if (instant < shownFrom) continue;
    while (next < recorded.length && recorded[next].instant < instant) next++;
    if (next < recorded.length && recorded[next].instant === instant) continue;
    missing.push({ at: instant, until: Math.min(due.instants[index + 1] ?? schedule.next(instant) ?? to, to) });
  }
  let shown = recorded;
  if (asked.length > 0) {
    shown = [...recorded, ...asked.filter((mark) => mark.instant >= shownFrom)];
    shown.sort((a, b) => a.instant - b.instant);
  }

  const truncated = shownFrom > from;
  const timeline: Timeline = {
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    shownFrom: new Date(shownFrom).toISOString(),
    knownSince: knownSince !== null && knownSince > shownFrom ? new Date(Math.min(knownSince, to)).toISOString() : null,
    marks: [],
    gaps: [],
    buckets: null,
    bucketMs: null,
    truncated,
  };
  if (shown.length + missing.length > maxMarks) {
    timeline.bucketMs = bucketSizeOf(to - from);
    timeline.buckets = bucketsOf(shown, missing, timeline.bucketMs, shownFrom, to);
    return timeline;
  }
  timeline.marks = shown.map(({ instant, runKey, outcome, trigger, runId, runs }) => ({
    at: trigger === 'schedule' ? runKey.slice(0, 24) : new Date(instant).toISOString(),
    outcome,
    trigger,
    runId,
    runs,
  }));
  let open: TimelineGap | null = null;
  let previous = Number.NaN;
  for (const gap of missing) {
    // Consecutive due instants without a record make one stretch.
    if (open && gap.at === previous) {
      open.to = new Date(gap.until).toISOString();
      open.occurrences++;
    } else {
      open = { from: new Date(gap.at).toISOString(), to: new Date(gap.until).toISOString(), occurrences: 1 };
      timeline.gaps.push(open);
    }
    previous = gap.until;
  }
  return timeline;
};

/** Counts per outcome in round buckets (epoch-aligned) covering [shownFrom, to); empty buckets are left out. Marks and missing instants come oldest first. */
const bucketsOf = (marks: readonly BuiltMark[], missing: ReadonlyArray<{ at: number }>, size: number, shownFrom: number, to: number): TimelineBucket[] => {
  const buckets = new Map<number, TimelineBucket & { weight: number }>();
  let current: (TimelineBucket & { weight: number }) | undefined;
  let currentStart = Number.NaN;
  const bucketAt = (instant: number) => {
    const start = Math.floor(instant / size) * size;
    if (start === currentStart && current) return current;
    let bucket = buckets.get(start);
    if (!bucket) {
      bucket = {
        from: new Date(start).toISOString(),
        succeeded: 0,
        failed: 0,
        missed: 0,
        running: 0,
        'taken-over': 0,
        notRun: 0,
        runNow: 0,
        runId: null,
        weight: -1,
      };
      buckets.set(start, bucket);
    }
    currentStart = start;
    current = bucket;
    return bucket;
  };
  for (const mark of marks) {
    if (mark.instant < shownFrom || mark.instant >= to) continue;
    const bucket = bucketAt(mark.instant);
    if (mark.trigger === 'run-now') bucket.runNow++;
    else bucket[mark.outcome]++;
    if (WEIGHT[mark.outcome] > bucket.weight) {
      bucket.weight = WEIGHT[mark.outcome];
      bucket.runId = mark.runId;
    }
  }
  for (const gap of missing) bucketAt(gap.at).notRun++;
  return [...buckets.entries()].sort(([a], [b]) => a - b).map(([, { weight: _weight, ...bucket }]) => bucket);
};
