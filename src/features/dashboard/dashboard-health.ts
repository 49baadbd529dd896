import type { HealthStateRow, HealthWindowRow } from '../job-scheduler/operations/occurrence-history.sql';
import { dueInstantOf } from '../scheduling/occurrence/occurrence-keys';

/**
 * ok: on schedule; degraded: a failure in the window, not enough to call it failing; failing: two
 * failures in a row, or three of the last ten; late: two or more due occurrences without a
 * success; disabled: paused or switched off.
 */
export type JobHealthState = 'ok' | 'degraded' | 'late' | 'failing' | 'disabled';

/** A job's health over a window: its last 10 occurrences, and those of the last 24 hours. */
export interface JobHealthWindow {
  /** Finished occurrences among the last 10 (running ones are not counted), and how many succeeded. */
  last10: { finished: number; succeeded: number };
  /** Finished occurrences due in the last 24 h (of the newest read), and how many succeeded. */
  last24h: { finished: number; succeeded: number };
  /** Failures since the last success, newest first. */
  consecutiveFailures: number;
  /** The newest failure in the window: when it was due, and its error message or recorded outcome. */
  lastError: { at: string; message: string } | null;
  /**
   * Durations of the finished occurrences of the last 24 h, in ms: the handler's run time where the
   * run recorded it (data.handlerMs), else claim to finish (the claim is at most a few seconds
   * before the due instant). p50 and p95 are nearest-rank; recent: the 30 newest, oldest first.
   */
  durationMs: { p50: number; p95: number; recent: number[] } | null;
}

/** Rows read per job for its window, the newest: the 24 h figures of a job more frequent than every ~5 min cover fewer than 24 h. */
export const HEALTH_WINDOW_ROWS = 300;
/** The span of a window's "24 h" figures. */
export const HEALTH_DAY_MS = 86_400_000;

/** The instant a due runKey names, in ISO 8601 (the epoch for a key that names none). */
const dueAt = (runKey: string): string => new Date(dueInstantOf(runKey) ?? 0).toISOString();

/** The window of a job without occurrences. */
const EMPTY_WINDOW: JobHealthWindow = {
  last10: { finished: 0, succeeded: 0 },
  last24h: { finished: 0, succeeded: 0 },
  consecutiveFailures: 0,
  lastError: null,
  durationMs: null,
};

/** The newest failure a row names: when it was due, and its message (or its recorded outcome). */
const lastErrorOf = (row: Pick<HealthWindowRow, 'lastFailureKey' | 'lastFailureMessage' | 'lastFailureOutcome'>): JobHealthWindow['lastError'] =>
  row.lastFailureKey === null
    ? null
    : {
        at: dueAt(row.lastFailureKey),
        message: row.lastFailureMessage ?? (row.lastFailureOutcome ? `recorded ${row.lastFailureOutcome}` : 'failed (no message recorded)'),
      };

/**
 * What the failing list shows of a job, from its 10 newest finished occurrences alone: successes
 * among them, failures in a row (at most 10: 10 means ten or more), and the newest failure.
 */
export type JobStateWindow = Pick<JobHealthWindow, 'last10' | 'consecutiveFailures' | 'lastError'>;

export const stateWindowOf = (row: HealthStateRow | undefined): JobStateWindow =>
  row
    ? { last10: { finished: row.finished, succeeded: row.succeeded }, consecutiveFailures: row.failuresInARow, lastError: lastErrorOf(row) }
    : { last10: { finished: 0, succeeded: 0 }, consecutiveFailures: 0, lastError: null };

/** The window of one job from the row PostgreSQL computed for it (JobRunsInspector.healthWindows; one per job asked). */
export const healthWindowOf = (row: HealthWindowRow | undefined): JobHealthWindow => {
  if (!row) return EMPTY_WINDOW;
  return {
    last10: { finished: row.last10Finished, succeeded: row.last10Succeeded },
    last24h: { finished: row.dayFinished, succeeded: row.daySucceeded },
    consecutiveFailures: row.consecutiveFailures,
    lastError: lastErrorOf(row),
    durationMs: row.durationPercentiles ? { p50: row.durationPercentiles[0], p95: row.durationPercentiles[1], recent: row.recentDurations ?? [] } : null,
  };
};

/** When the newest success in a window was due, or null without one. */
export const lastSuccessOf = (row: HealthWindowRow | undefined): string | null => (row?.lastSuccessKey ? dueAt(row.lastSuccessKey) : null);

/** The rule: failing at two failures in a row or three of the last ten; degraded at one of ten. */
const judged = (finished: number, succeeded: number, inARow: number): 'ok' | 'degraded' | 'failing' => {
  const failures10 = finished - succeeded;
  if (inARow >= 2 || failures10 >= 3) return 'failing';
  if (failures10 > 0) return 'degraded';
  return 'ok';
};

/** The state a window gives (before late and disabled, which the caller knows). */
export const windowState = (window: JobHealthWindow): 'ok' | 'degraded' | 'failing' =>
  judged(window.last10.finished, window.last10.succeeded, window.consecutiveFailures);

/** The same state from a job's 10 newest finished occurrences alone (JobRunsInspector.healthStates): the rule needs no more. */
export const stateOf = (row: HealthStateRow | undefined): 'ok' | 'degraded' | 'failing' =>
  row ? judged(row.finished, row.succeeded, row.failuresInARow) : 'ok';
