/** One line to log, at a level. */
export interface LogLine {
  level: 'error' | 'log';
  message: string;
  stack?: string;
}

interface FailureStreak {
  /** errorCode, error name and message: what makes two failures "the same error". */
  signature: string;
  /** Failures in this streak, all errors. */
  failures: number;
  /** Repeats not yet told in a line. */
  untold: number;
  lastMessage: string;
  lastToldAt: number;
}

/** How often a job failing with the same error is summarized, by default: once a minute. */
export const DEFAULT_FAILURE_LOG_INTERVAL_MS = 60_000;

/**
 * Keeps a failing job from flooding the logs: the first failure of a streak (and the first of a
 * different error) is logged whole, with its stack; repeats of the same error are summarized,
 * count and last message, at most once per interval per job; the first success after failures
 * logs the recovery. Decides only: the caller logs, and metrics still count every run.
 */
export class FailureLog {
  private readonly streaks = new Map<string, FailureStreak>();

  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number,
  ) {}

  /** What to log for a failed run of `job` (`described`: the run and its error, in one line). */
  failed(job: string, signature: string, described: string, stack?: string): LogLine[] {
    const now = this.now();
    const streak = this.streaks.get(job);
    if (streak && streak.signature === signature) {
      streak.failures++;
      streak.untold++;
      streak.lastMessage = described;
      if (now - streak.lastToldAt < this.intervalMs) return [];
      return [this.summary(job, streak, now)];
    }
    const lines = streak && streak.untold > 0 ? [this.summary(job, streak, now)] : [];
    this.streaks.set(job, { signature, failures: (streak?.failures ?? 0) + 1, untold: 0, lastMessage: described, lastToldAt: now });
    return [...lines, { level: 'error', message: described, stack }];
  }

  /** What to log, besides the success itself, for a successful run of `job`. */
  succeeded(job: string): LogLine[] {
    const streak = this.streaks.get(job);
    if (!streak) return [];
    this.streaks.delete(job);
    const lines = streak.untold > 0 ? [this.summary(job, streak, this.now())] : [];
    return [...lines, { level: 'log', message: `${job} recovered after ${streak.failures} failed run(s)` }];
  }

  private summary(job: string, streak: FailureStreak, now: number): LogLine {
    const line: LogLine = {
      level: 'error',
      message: `${job} failed ${streak.untold} more time(s) with the same error in the last ${Math.round((now - streak.lastToldAt) / 1000)} s (last: ${streak.lastMessage})`,
    };
    streak.untold = 0;
    streak.lastToldAt = now;
    return line;
  }
}
