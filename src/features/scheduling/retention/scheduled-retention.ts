import { parseInterval } from '../../job-scheduler/duration';
import { PRUNE_DUTY_CYCLE_RULE, pruneDutyCycleOf } from '../../job-scheduler/operations/prune-pacing';
import type { JobSchedulerStatus } from '../../job-scheduler/job-scheduler.entity';
import { SCHEDULE_HORIZON_MS, SCHEDULE_HORIZON_TEXT } from '../schedule/due-schedule';
import type { JobDeclaration } from '../schedule/job-declaration';
import { schedulingErrors } from '../scheduling.errors';

/** How long the scheduler keeps the rows of declared jobs' occurrences; `false` keeps them forever. */
export interface ScheduledRetentionOptions {
  /** Keep SUCCESS occurrences this long (ms or text like '7d'). Default 7 days. */
  success?: number | string;
  /** Keep FAIL occurrences (failed, missed) this long. Default 30 days. */
  fail?: number | string;
  /** How often to prune, aligned on the epoch, once across all instances. Default '1h'. */
  every?: number | string;
  /** The share of a pass spent in prune statements, 0.01 to 1 (default 0.5): `prune`'s `dutyCycle`. */
  dutyCycle?: number;
}

export const DEFAULT_SCHEDULED_RETENTION = Object.freeze({ success: '7d', fail: '30d', every: '1h' });

export interface ResolvedScheduledRetention {
  successMs: number;
  failMs: number;
  everyMs: number;
  dutyCycle: number;
}

/** How many coming occurrences are looked at to find a job's longest gap. */
const GAPS_SAMPLED = 12;

const durationOption = (field: string, value: unknown, fallback: string, lateToleranceMs: number): number => {
  const ms = parseInterval(value === undefined ? fallback : value);
  if (ms === null) throw schedulingErrors.invalidOption(`retention.${field}`, "a positive duration (ms, or text like '7d')", value);
  if (field === 'every' && ms > SCHEDULE_HORIZON_MS) {
    // As a job's interval: a period that never comes would silently switch retention off.
    throw schedulingErrors.invalidOption('retention.every', `at most ${SCHEDULE_HORIZON_TEXT} (8 years, as a job's "every")`, value);
  }
  if (field !== 'every' && ms <= lateToleranceMs) {
    // Missed detection reads a job's latest occurrence: a horizon inside the late tolerance could
    // prune it while an instance still catches up.
    throw schedulingErrors.invalidOption(`retention.${field}`, `longer than lateToleranceMs (${lateToleranceMs} ms)`, value);
  }
  return ms;
};

/** Validates the retention option at boot; null when switched off (`retention: false`). */
export const resolveScheduledRetention = (raw: unknown, lateToleranceMs: number): ResolvedScheduledRetention | null => {
  if (raw === false) return null;
  if (raw !== undefined && (typeof raw !== 'object' || raw === null)) {
    throw schedulingErrors.invalidOption('retention', '{ success?, fail?, every?, dutyCycle? } or false', raw);
  }
  const options = (raw ?? {}) as ScheduledRetentionOptions;
  const dutyCycle = pruneDutyCycleOf(options.dutyCycle);
  if (dutyCycle === null) throw schedulingErrors.invalidOption('retention.dutyCycle', PRUNE_DUTY_CYCLE_RULE, options.dutyCycle);
  return {
    dutyCycle,
    successMs: durationOption('success', options.success, DEFAULT_SCHEDULED_RETENTION.success, lateToleranceMs),
    failMs: durationOption('fail', options.fail, DEFAULT_SCHEDULED_RETENTION.fail, lateToleranceMs),
    everyMs: durationOption('every', options.every, DEFAULT_SCHEDULED_RETENTION.every, lateToleranceMs),
  };
};

/** What retention needs of a job: its name (the lease code) and its due instants. */
export type RetainedJob = Pick<JobDeclaration, 'name'> & { schedule: { next(after: number): number | null } };

/** The longest gap between the job's coming occurrences (or 0 for a job that stops). */
export const longestGapMs = (declaration: RetainedJob, now: number): number => {
  let longest = 0;
  let previous = declaration.schedule.next(now);
  for (let index = 0; previous !== null && index < GAPS_SAMPLED; index++) {
    const next = declaration.schedule.next(previous);
    if (next === null) break;
    longest = Math.max(longest, next - previous);
    previous = next;
  }
  return longest;
};

/** One prune: these jobs' rows of this status, older than this. */
export interface RetentionPass {
  status: JobSchedulerStatus.SUCCESS | JobSchedulerStatus.FAIL;
  olderThanMs: number;
  codes: string[];
}

/**
 * What to prune, grouped by horizon: each job keeps its rows at least the configured time, and at
 * least two of its intervals plus the late tolerance, so that its latest occurrences stay for
 * missed detection and for health ("no success for two intervals"). Pure.
 */
export const retentionPasses = (
  declarations: readonly RetainedJob[],
  retention: ResolvedScheduledRetention,
  lateToleranceMs: number,
  now: number,
): RetentionPass[] => {
  const passes = new Map<string, RetentionPass>();
  for (const declaration of declarations) {
    const floor = 2 * longestGapMs(declaration, now) + lateToleranceMs;
    for (const [status, configured] of [
      ['SUCCESS', retention.successMs],
      ['FAIL', retention.failMs],
    ] as const) {
      const olderThanMs = Math.max(configured, floor);
      const key = `${status} ${olderThanMs}`;
      const pass = passes.get(key) ?? { status: status as RetentionPass['status'], olderThanMs, codes: [] };
      pass.codes.push(declaration.name);
      passes.set(key, pass);
    }
  }
  return [...passes.values()];
};
