import type { OccurrenceOutcome, OccurrenceRow } from '../job-scheduler/operations/occurrence-history.sql';
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

/** The outcome of each weight (WEIGHT's inverse). */
const OUTCOME_OF_WEIGHT: readonly OccurrenceOutcome[] = ['succeeded', 'taken-over', 'missed', 'failed', 'running'];

const DIGIT_0 = 48;
const DIGIT_9 = 57;
/** The characters of `YYYY-MM-DDTHH:mm:ss.sssZ` that are not digits. */
const ISO_SEPARATORS = new Map([
  [4, '-'],
  [7, '-'],
  [10, 'T'],
  [13, ':'],
  [16, ':'],
  [19, '.'],
  [23, 'Z'],
]);

/**
 * dueInstantOf(runKey), without its regular expression for the common key (a due instant alone,
 * 24 characters): a timeline reads up to 12,000 keys.
 */
const instantOfKey = (runKey: string): number | null => {
  if (runKey.length !== 24) return dueInstantOf(runKey);
  for (let index = 0; index < 24; index++) {
    const separator = ISO_SEPARATORS.get(index);
    if (separator === undefined ? runKey.charCodeAt(index) < DIGIT_0 || runKey.charCodeAt(index) > DIGIT_9 : runKey[index] !== separator) return null;
  }
  return Date.parse(runKey);
};

const RUN_NOW_KEY = 'run-now ';

/** A runNow run's mark while the timeline is built (a few of them: objects). */
interface AskedMark {
  instant: number;
  outcome: OccurrenceOutcome;
  runId: string;
}

/**
 * Marks from the recorded rows (one per due instant; one per runNow run, in a lower lane) and the
 * gaps (due instants in the window that no row records, merged into stretches), both over the
 * same window [shownFrom, to): when a range read more than `readLimit` rows, or the schedule had
 * more than `maxDue` due instants, only the newest are shown and shownFrom says where that starts.
 * No gap is claimed before `knownSince`. Past `maxMarks`, counts per round bucket instead.
 *
 * Rows come newest first, each instant's rows together (as JobRunsInspector.findOccurrences
 * returns them); any other order is sorted first. The scheduled marks are kept in typed arrays
 * (no object per occurrence: a dense job's 12,000 would be garbage at once) and the missing
 * instants found in one walk of both ascending lists.
 */
export const buildTimeline = (rows: readonly OccurrenceRow[], schedule: DueSchedule, bounds: TimelineBounds): Timeline => {
  const { from, to, readLimit, knownSince } = bounds;
  const maxDue = bounds.maxDue ?? 20_000;
  const maxMarks = bounds.maxMarks ?? 600;
  // Scheduled marks, newest first: instant, worst weight, runs, the row shown (worst, first read
  // of it) and the first row read (whose key is the mark's text).
  const instants = new Float64Array(rows.length);
  const weights = new Uint8Array(rows.length);
  const runs = new Uint32Array(rows.length);
  const shownRow = new Uint32Array(rows.length);
  const firstRow = new Uint32Array(rows.length);
  let count = 0;
  const asked: AskedMark[] = [];
  // Rows read per range (the due instants', the runNow keys'): a range that returned more than
  // readLimit was cut by the statement's limit.
  let scheduledRows = 0;
  let askedRows = 0;
  for (let index = 0; index < rows.length; index++) {
    const { runKey, outcome, id } = rows[index];
    if (runKey.startsWith(RUN_NOW_KEY)) {
      askedRows++;
      const at = askedAtOf(runKey);
      if (at !== null) asked.push({ instant: at, outcome, runId: id });
      continue;
    }
    scheduledRows++;
    const due = instantOfKey(runKey);
    if (due === null || Number.isNaN(due)) continue;
    const weight = WEIGHT[outcome];
    const last = count - 1;
    if (last >= 0 && instants[last] === due) {
      // Tenants' runs of one due instant make one mark: the worst outcome shown.
      runs[last]++;
      if (weight > weights[last]) {
        weights[last] = weight;
        shownRow[last] = index;
      }
      continue;
    }
    if (last >= 0 && due > instants[last]) return buildTimeline(newestFirst(rows), schedule, bounds);
    instants[count] = due;
    weights[count] = weight;
    runs[count] = 1;
    shownRow[count] = index;
    firstRow[count] = index;
    count++;
  }

  // A range cut by the limit: its oldest instant may be partly read (some of its tenants), so the
  // window starts just after it.
  let shownFrom = from;
  if (scheduledRows > readLimit && count > 0) shownFrom = Math.max(shownFrom, instants[count - 1] + 1);
  if (askedRows > readLimit && asked.length > 0) shownFrom = Math.max(shownFrom, Math.min(...asked.map((mark) => mark.instant)) + 1);

  const gapsFrom = Math.max(shownFrom, knownSince ?? Number.NEGATIVE_INFINITY);
  const due = gapsFrom < to ? dueInstantsNewestFirst(schedule, gapsFrom, to, maxDue) : { instants: [], cut: false };
  if (due.cut) shownFrom = Math.max(shownFrom, due.instants[0]);

  // The scheduled marks shown are [0, shown) (newest first); walked from shown - 1 down, oldest first.
  let shown = count;
  while (shown > 0 && instants[shown - 1] < shownFrom) shown--;
  // Due instants without a record: one walk of both ascending lists.
  const missingAt: number[] = [];
  const missingUntil: number[] = [];
  let recorded = shown - 1;
  for (let index = 0; index < due.instants.length; index++) {
    const instant = due.instants[index];
    if (instant < shownFrom) continue;
    while (recorded >= 0 && instants[recorded] < instant) recorded--;
    if (recorded >= 0 && instants[recorded] === instant) continue;
    missingAt.push(instant);
    missingUntil.push(Math.min(due.instants[index + 1] ?? schedule.next(instant) ?? to, to));
  }
  const askedShown = asked.filter((mark) => mark.instant >= shownFrom).sort((a, b) => a.instant - b.instant);
  /** Every mark shown, oldest first (a scheduled mark before a runNow mark of the same instant). */
  const eachShown = (visit: (instant: number, outcome: OccurrenceOutcome, trigger: TimelineMark['trigger'], runId: string, mark: number) => void): void => {
    let next = 0;
    for (let mark = shown - 1; mark >= 0; mark--) {
      for (; next < askedShown.length && askedShown[next].instant < instants[mark]; next++) {
        visit(askedShown[next].instant, askedShown[next].outcome, 'run-now', askedShown[next].runId, -1);
      }
      visit(instants[mark], OUTCOME_OF_WEIGHT[weights[mark]], 'schedule', rows[shownRow[mark]].id, mark);
    }
    for (; next < askedShown.length; next++) visit(askedShown[next].instant, askedShown[next].outcome, 'run-now', askedShown[next].runId, -1);
  };

  const timeline: Timeline = {
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    shownFrom: new Date(shownFrom).toISOString(),
    knownSince: knownSince !== null && knownSince > shownFrom ? new Date(Math.min(knownSince, to)).toISOString() : null,
    marks: [],
    gaps: [],
    buckets: null,
    bucketMs: null,
    truncated: shownFrom > from,
  };
  if (shown + askedShown.length + missingAt.length > maxMarks) {
    timeline.bucketMs = bucketSizeOf(to - from);
    timeline.buckets = bucketsOf(eachShown, missingAt, timeline.bucketMs, shownFrom, to);
    return timeline;
  }
  eachShown((instant, outcome, trigger, runId, mark) => {
    const at = mark >= 0 ? rows[firstRow[mark]].runKey.slice(0, 24) : new Date(instant).toISOString();
    timeline.marks.push({ at, outcome, trigger, runId, runs: mark >= 0 ? runs[mark] : 1 });
  });
  let open: TimelineGap | null = null;
  let previous = Number.NaN;
  for (let index = 0; index < missingAt.length; index++) {
    // Consecutive due instants without a record make one stretch.
    if (open && missingAt[index] === previous) {
      open.to = new Date(missingUntil[index]).toISOString();
      open.occurrences++;
    } else {
      open = { from: new Date(missingAt[index]).toISOString(), to: new Date(missingUntil[index]).toISOString(), occurrences: 1 };
      timeline.gaps.push(open);
    }
    previous = missingUntil[index];
  }
  return timeline;
};

/** The rows newest first by due instant, each instant's rows together in the order given (runNow rows last, in the order given). */
const newestFirst = (rows: readonly OccurrenceRow[]): OccurrenceRow[] => {
  const instantOf = (row: OccurrenceRow): number => {
    const instant = row.runKey.startsWith(RUN_NOW_KEY) ? null : instantOfKey(row.runKey);
    return instant === null || Number.isNaN(instant) ? Number.NEGATIVE_INFINITY : instant;
  };
  const keyed = rows.map((row) => ({ row, instant: instantOf(row) }));
  // A stable sort: rows of one instant keep their order (the first of the worst outcome is shown).
  return keyed.sort((a, b) => (a.instant === b.instant ? 0 : a.instant > b.instant ? -1 : 1)).map(({ row }) => row);
};

/** Counts per outcome in round buckets (epoch-aligned) covering [shownFrom, to); empty buckets are left out. Marks and missing instants come oldest first. */
const bucketsOf = (
  eachShown: (visit: (instant: number, outcome: OccurrenceOutcome, trigger: TimelineMark['trigger'], runId: string) => void) => void,
  missingAt: readonly number[],
  size: number,
  shownFrom: number,
  to: number,
): TimelineBucket[] => {
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
  eachShown((instant, outcome, trigger, runId) => {
    if (instant < shownFrom || instant >= to) return;
    const bucket = bucketAt(instant);
    if (trigger === 'run-now') bucket.runNow++;
    else bucket[outcome]++;
    if (WEIGHT[outcome] > bucket.weight) {
      bucket.weight = WEIGHT[outcome];
      bucket.runId = runId;
    }
  });
  for (const at of missingAt) bucketAt(at).notRun++;
  return [...buckets.entries()].sort(([a], [b]) => a - b).map(([, { weight: _weight, ...bucket }]) => bucket);
};
