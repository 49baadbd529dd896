import { unitOf } from '../chaos.random';

/**
 * What every instance of the scheduler chaos run declares, and what the verdict expects of it:
 * the jobs, their schedules, their tenants and the dynamic schedules. Shared by the instance
 * process (decorators), the orchestrator (dynamic schedules, fault timing) and the verdict (due
 * occurrences). Every schedule is an epoch-aligned interval, so the due instants are plain
 * multiples and the harness never needs the library's own schedule math to know them.
 */

/** The lease of every declared job and @RunOnce tick: short, so that stalls and take-overs fit in minutes. */
export const LEASE_MS = 10_000;
/** Dynamic schedules claim 3 s ahead by default; their lease must be at least 4 times that to be claimed ahead. */
export const DYNAMIC_LEASE_MS = 15_000;

/** The library's defaults the harness relies on when it judges (README: Scheduling, Dynamic schedules). */
export const LIBRARY_DEFAULTS = {
  takeOverScanMs: 30_000,
  lateToleranceMs: 60_000,
  claimAheadMs: 2_000,
  dynamicClaimAheadMs: 3_000,
  changePollMs: 2_000,
  shutdownGraceMs: 10_000,
  maxAttempts: 3,
} as const;

/**
 * More tenants than a per-tenant job runs at once on an instance (tenantConcurrency, 8 by
 * default): some wait claimed for a slot, as at scale; one id needs encoding in the lease key.
 */
export const TENANTS = [
  'acme',
  'globex',
  'initech',
  'umbrella',
  'hooli',
  'stark',
  'wayne enterprises',
  'cyberdyne',
  'tyrell',
  'wonka',
  'soylent',
  'oscorp',
] as const;

export type JobKind = 'scheduled' | 'tenant' | 'run-once' | 'dynamic';

/** How long a handler works: mostly short, sometimes longer than its interval (an overrun). */
export interface WorkShape {
  minMs: number;
  maxMs: number;
  /** Share of runs that overrun. */
  overrunShare: number;
  overrunMinMs: number;
  overrunMaxMs: number;
}

export interface DeclaredJob {
  /** The lease code: the @Scheduled name, the @RunOnce name. */
  code: string;
  kind: Exclude<JobKind, 'dynamic'>;
  everyMs: number;
  leaseMs: number;
  abandoned: 'take-over' | 'drop';
  jitterMs: number;
  work: WorkShape;
}

const work = (everyMs: number, maxMs: number, overrunShare: number): WorkShape => ({
  minMs: 100,
  maxMs,
  overrunShare,
  overrunMinMs: everyMs + 500,
  overrunMaxMs: everyMs + 3_000,
});

/** The jobs every instance declares (in scheduler-chaos.jobs.ts, with these very values). */
export const DECLARED_JOBS: readonly DeclaredJob[] = [
  { code: 'chaos.every-5s', kind: 'scheduled', everyMs: 5_000, leaseMs: LEASE_MS, abandoned: 'take-over', jitterMs: 0, work: work(5_000, 1_500, 0.12) },
  { code: 'chaos.jitter-3s', kind: 'scheduled', everyMs: 3_000, leaseMs: LEASE_MS, abandoned: 'take-over', jitterMs: 1_000, work: work(3_000, 1_000, 0.1) },
  { code: 'chaos.drop-5s', kind: 'scheduled', everyMs: 5_000, leaseMs: LEASE_MS, abandoned: 'drop', jitterMs: 0, work: work(5_000, 1_500, 0.1) },
  { code: 'chaos.tenants-10s', kind: 'tenant', everyMs: 10_000, leaseMs: LEASE_MS, abandoned: 'take-over', jitterMs: 0, work: work(10_000, 2_500, 0.05) },
  // @Cron('*/5 * * * * *') @RunOnce(...): every 5 s of each minute, i.e. epoch multiples of 5 s.
  { code: 'chaos.run-once-5s', kind: 'run-once', everyMs: 5_000, leaseMs: LEASE_MS, abandoned: 'take-over', jitterMs: 0, work: work(5_000, 1_500, 0.1) },
];

/** The @ScheduleHandler of every dynamic schedule: the lease code of their occurrences. */
export const DYNAMIC_HANDLER = 'chaos.dynamic-run';

export interface DynamicScheduleSpec {
  id: string;
  everyMs: number;
  tenantId?: string;
  work: WorkShape;
  /** When the orchestrator changes it, as a share of the run's window: added, or removed. */
  addedAt?: number;
  removedAt?: number;
}

export const DYNAMIC_SCHEDULES: readonly DynamicScheduleSpec[] = [
  { id: 'poll-4s', everyMs: 4_000, work: work(4_000, 1_200, 0.1) },
  { id: 'sync-5s', everyMs: 5_000, work: work(5_000, 1_500, 0.1) },
  { id: 'report 6s/acme', everyMs: 6_000, tenantId: 'acme', work: work(6_000, 1_500, 0.1), removedAt: 0.6 },
  { id: 'late-3s', everyMs: 3_000, work: work(3_000, 1_000, 0.1), addedAt: 0.3 },
];

/** The lease runKey of an occurrence, as README documents it (Scheduling / Tenancy / Dynamic schedules). */
export const runKeyOf = (scheduledAt: number, owner: { tenantId?: string; scheduleId?: string } = {}): string => {
  const instant = new Date(scheduledAt).toISOString();
  if (owner.scheduleId !== undefined) return `schedule=${encodeURIComponent(owner.scheduleId)} ${instant}`;
  return owner.tenantId === undefined ? instant : `${instant} tenant=${encodeURIComponent(owner.tenantId)}`;
};

/** One occurrence of one job (and tenant, or dynamic schedule): the unit the verdict judges. */
export interface OccurrenceKey {
  code: string;
  runKey: string;
}

export const occurrenceId = (key: OccurrenceKey): string => `${key.code} ${key.runKey}`;

/** How long a run of this occurrence works: the same whichever instance runs it, per attempt. */
export const workMsOf = (seed: number, shape: WorkShape, code: string, runKey: string, fencingToken: number): number => {
  const overrun = unitOf(seed, 'overrun', code, runKey) < shape.overrunShare;
  const unit = unitOf(seed, 'work', code, runKey, fencingToken);
  return Math.round(overrun ? shape.overrunMinMs + unit * (shape.overrunMaxMs - shape.overrunMinMs) : shape.minMs + unit * (shape.maxMs - shape.minMs));
};

/** The work shape of a run, by its lease code (and schedule id for dynamic runs). */
export const workShapeOf = (code: string, scheduleId?: string): WorkShape => {
  if (code === DYNAMIC_HANDLER) {
    const schedule = DYNAMIC_SCHEDULES.find((candidate) => candidate.id === scheduleId);
    if (!schedule) throw new Error(`unknown dynamic schedule ${scheduleId}`);
    return schedule.work;
  }
  const job = DECLARED_JOBS.find((candidate) => candidate.code === code);
  if (!job) throw new Error(`unknown job ${code}`);
  return job.work;
};

/** Multiples of `everyMs` in [from, to]. */
export const instantsBetween = (everyMs: number, from: number, to: number): number[] => {
  const instants: number[] = [];
  for (let at = Math.ceil(from / everyMs) * everyMs; at <= to; at += everyMs) instants.push(at);
  return instants;
};

/** The shortest interval of any schedule: faults aimed "just before an instant" pick one of these. */
export const ALL_INTERVALS_MS = [...new Set([...DECLARED_JOBS.map((job) => job.everyMs), ...DYNAMIC_SCHEDULES.map((schedule) => schedule.everyMs)])].sort(
  (a, b) => a - b,
);
