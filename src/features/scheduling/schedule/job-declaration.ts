import { MAX_TIMER_MS } from '../../job-scheduler/job-scheduler.constants';
import { DeclarationError } from '../scheduling.errors';
import type { JobSchedule, ScheduledJobOptions, ScheduleOfRun } from '../scheduling.types';
import { cronExpressionError } from './cron-expression';
import { CronSchedule, type DueSchedule, IntervalSchedule, SCHEDULE_HORIZON_MS, SCHEDULE_HORIZON_TEXT } from './due-schedule';
import { parseInterval } from '../../job-scheduler/duration';
import { isKnownTimeZone } from './time-zone';

/** `<context>.<job-name>`: two lowercase kebab-case segments; it is the lease's code (≤ 64). */
const JOB_NAME = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*\.[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
const MAX_JOB_NAME = 64;
/** How many tenants of a per-tenant job one instance runs at once, by default and at most. */
export const DEFAULT_TENANT_CONCURRENCY = 8;
export const MAX_TENANT_CONCURRENCY = 100;

/** A declaration with every value checked and defaults applied. */
export interface JobDeclaration {
  name: string;
  schedule: DueSchedule;
  overlap: 'skip' | 'queue';
  missed: 'drop' | 'run-once';
  timeoutMs?: number;
  tenancy: 'global' | 'per-tenant';
  /** Tenants run at once on one instance (per-tenant jobs; 1 for global ones). */
  tenantConcurrency: number;
  jitterMs: number;
  leaseMs: number;
  abandoned: 'take-over' | 'drop';
  maxAttempts: number;
  /**
   * Set for a dynamic schedule: `name` is then its handler (the lease code), and its occurrences
   * are keyed by this schedule's id.
   */
  dynamicSchedule?: ScheduleOfRun;
}

/** What the scheduler keys a job by: a dynamic schedule's id, else the job's name. */
export const jobKeyOf = (declaration: Pick<JobDeclaration, 'name' | 'dynamicSchedule'>): string => declaration.dynamicSchedule?.id ?? declaration.name;

/**
 * The lease of a scheduled run that names none: short, so that an occurrence whose holder died
 * is taken over within about one lease; heartbeats (every 20 s) keep long runs alive.
 */
export const DEFAULT_SCHEDULED_LEASE_MS = 60_000;
/** Owners an occurrence may have in all (first run and take-overs) before it is recorded abandoned. */
export const DEFAULT_MAX_ATTEMPTS = 3;
const MAX_MAX_ATTEMPTS = 100;

export const checkJobName = (name: unknown): string => {
  if (typeof name !== 'string' || name.length > MAX_JOB_NAME || !JOB_NAME.test(name)) {
    throw new DeclarationError(String(name), 'the name must be <context>.<job-name>: two lowercase kebab-case segments, at most 64 characters');
  }
  return name;
};

/** Validates a schedule for the named job and compiles it. Throws DeclarationError. */
export const compileSchedule = (name: string, schedule: unknown, now = Date.now()): DueSchedule => {
  if (typeof schedule !== 'object' || schedule === null) throw new DeclarationError(name, 'a schedule is required');
  const { every, cron, timeZone } = schedule as Partial<Record<keyof JobSchedule, unknown>>;
  if ((every === undefined) === (cron === undefined)) {
    throw new DeclarationError(name, 'give exactly one of "every" (an interval) or "cron" (an expression)');
  }
  if (every !== undefined) {
    if (timeZone !== undefined) throw new DeclarationError(name, 'an interval follows no time zone; write a cron for local times');
    const everyMs = parseInterval(every);
    if (everyMs === null) {
      throw new DeclarationError(name, `"every" must be a positive whole number of ms or text like "15m", got ${String(every)}`);
    }
    if (everyMs > SCHEDULE_HORIZON_MS) {
      throw new DeclarationError(
        name,
        `"every" must be at most ${SCHEDULE_HORIZON_TEXT} (8 years, ${SCHEDULE_HORIZON_MS} ms: a cron must fire within that too), got ${String(every)}`,
      );
    }
    return new IntervalSchedule(everyMs);
  }
  const reason = cronExpressionError(cron);
  if (reason) throw new DeclarationError(name, `cannot read the cron "${String(cron)}": ${reason}`);
  const zone = timeZone === undefined ? 'UTC' : timeZone;
  if (!isKnownTimeZone(zone)) throw new DeclarationError(name, `unknown time zone "${String(zone)}"`);
  const compiled = new CronSchedule((cron as string).trim(), zone);
  const first = compiled.next(now);
  if (first === null || first - now > SCHEDULE_HORIZON_MS) {
    throw new DeclarationError(name, `the cron "${String(cron)}" never fires within 8 years`);
  }
  return compiled;
};

const optionalDuration = (name: string, field: string, value: unknown, min: number): number | undefined => {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > MAX_TIMER_MS) {
    throw new DeclarationError(name, `${field} must be a whole number of ms from ${min} to ${MAX_TIMER_MS}, got ${String(value)}`);
  }
  return value as number;
};

const oneOf = <T extends string>(name: string, field: string, value: unknown, allowed: readonly T[]): T => {
  if (value === undefined) return allowed[0];
  if (!allowed.includes(value as T)) {
    throw new DeclarationError(name, `${field} must be one of ${allowed.map((v) => `'${v}'`).join(', ')}, got ${String(value)}`);
  }
  return value as T;
};

const checkMaxAttempts = (name: string, value: unknown): number => {
  if (value === undefined) return DEFAULT_MAX_ATTEMPTS;
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > MAX_MAX_ATTEMPTS) {
    throw new DeclarationError(name, `maxAttempts must be a whole number from 1 to ${MAX_MAX_ATTEMPTS}, got ${String(value)}`);
  }
  return value as number;
};

const tenantConcurrency = (name: string, tenancy: JobDeclaration['tenancy'], value: unknown): number => {
  if (value === undefined) return tenancy === 'per-tenant' ? DEFAULT_TENANT_CONCURRENCY : 1;
  if (tenancy !== 'per-tenant') throw new DeclarationError(name, "tenantConcurrency applies to tenancy: 'per-tenant' jobs only");
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > MAX_TENANT_CONCURRENCY) {
    throw new DeclarationError(name, `tenantConcurrency must be a whole number from 1 to ${MAX_TENANT_CONCURRENCY}, got ${String(value)}`);
  }
  return value as number;
};

/**
 * An instance still waiting its jitter must reach the occurrence before another may judge it late
 * and drop it for everyone: jitterMs below the scheduler's lateToleranceMs. Throws DeclarationError.
 */
export const checkJitterBelowTolerance = (declaration: JobDeclaration, lateToleranceMs: number): void => {
  if (declaration.jitterMs > 0 && declaration.jitterMs >= lateToleranceMs) {
    throw new DeclarationError(
      declaration.name,
      `jitterMs (${declaration.jitterMs}) must be below the scheduler's lateToleranceMs (${lateToleranceMs}): an instance still waiting its jitter would lose the occurrence to one that judged it missed`,
    );
  }
};

/** Checks a whole @Scheduled declaration. Throws DeclarationError naming the job. */
export const checkJobDeclaration = (rawName: unknown, options: ScheduledJobOptions): JobDeclaration => {
  const name = checkJobName(rawName);
  if (typeof options !== 'object' || options === null) throw new DeclarationError(name, 'options with a schedule are required');
  const tenancy = oneOf(name, 'tenancy', options.tenancy, ['global', 'per-tenant'] as const);
  return {
    name,
    schedule: compileSchedule(name, options),
    overlap: oneOf(name, 'overlap', options.overlap, ['skip', 'queue'] as const),
    missed: oneOf(name, 'missed', options.missed, ['drop', 'run-once'] as const),
    tenancy,
    tenantConcurrency: tenantConcurrency(name, tenancy, options.tenantConcurrency),
    timeoutMs: optionalDuration(name, 'timeoutMs', options.timeoutMs, 1),
    jitterMs: optionalDuration(name, 'jitterMs', options.jitterMs, 0) ?? 0,
    leaseMs: optionalDuration(name, 'leaseMs', options.leaseMs, 3) ?? DEFAULT_SCHEDULED_LEASE_MS,
    abandoned: oneOf(name, 'abandoned', options.abandoned, ['take-over', 'drop'] as const),
    maxAttempts: checkMaxAttempts(name, options.maxAttempts),
  };
};
