import type { RecentOccurrenceRow } from '../job-scheduler/operations/occurrence-history.sql';
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
   * Claim to finish of the finished occurrences of the last 24 h, in ms (the handler's own start is
   * not recorded; the claim is at most a few seconds before the due instant).
   */
  durationMs: { p50: number; p95: number; recent: number[] } | null;
}

/** Rows read per job for its window, the newest: the 24 h figures of a job more frequent than every ~5 min cover fewer than 24 h. */
export const HEALTH_WINDOW_ROWS = 300;
const DAY_MS = 86_400_000;

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

/** The window of one job from its newest occurrence rows (newest first). */
export const healthWindowOf = (rows: readonly RecentOccurrenceRow[], now: number): JobHealthWindow => {
  const finished = rows.filter((row) => row.status !== 'RUNNING');
  const last10 = finished.slice(0, 10);
  const day = finished.filter((row) => (dueInstantOf(row.runKey) ?? 0) >= now - DAY_MS);
  let consecutiveFailures = 0;
  for (const row of finished) {
    if (row.status !== 'FAIL') break;
    consecutiveFailures++;
  }
  const failed = finished.find((row) => row.status === 'FAIL');
  const durations = day.flatMap((row) => (row.durationMs === null ? [] : [row.durationMs]));
  const sorted = [...durations].sort((a, b) => a - b);
  return {
    last10: { finished: last10.length, succeeded: last10.filter((row) => row.status === 'SUCCESS').length },
    last24h: { finished: day.length, succeeded: day.filter((row) => row.status === 'SUCCESS').length },
    consecutiveFailures,
    lastError: failed
      ? {
          at: new Date(dueInstantOf(failed.runKey) ?? 0).toISOString(),
          message: failed.errorMessage ?? (failed.outcome ? `recorded ${failed.outcome}` : 'failed (no message recorded)'),
        }
      : null,
    durationMs: sorted.length ? { p50: percentile(sorted, 50), p95: percentile(sorted, 95), recent: durations.slice(0, 30).reverse() } : null,
  };
};

/** The state a window gives (before late and disabled, which the caller knows). */
export const windowState = (window: JobHealthWindow): 'ok' | 'degraded' | 'failing' => {
  const failures10 = window.last10.finished - window.last10.succeeded;
  if (window.consecutiveFailures >= 2 || failures10 >= 3) return 'failing';
  if (failures10 > 0) return 'degraded';
  return 'ok';
};
