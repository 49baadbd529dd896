import { randomUuid } from '../../job-scheduler/random-uuid';
import type { JobLease } from '../../job-scheduler/job-scheduler.types';
import { type OccurrenceToEnd, runKeyPrefixOf, type TakeOverKey, takeOverKeyOf } from '../../job-scheduler/lease-take-over';
import { occurrenceOfRunKey, scheduleIdOfPrefix, scheduleRunKeyPrefix } from './occurrence-keys';
import type { OccurrenceClaim } from './held-claim';
import { PeriodicTask } from '../timers/periodic-task';
import type { JobDeclaration } from '../schedule/job-declaration';
import type { AbandonedOccurrenceStore, SchedulerLogger, SchedulerTimers } from '../scheduler-ports';
import { JobAbandonedError, JobScheduleRemovedError } from '../scheduling.errors';
import type { JobRunRecord } from '../scheduling.types';

/**
 * What a job says about its abandoned occurrences (a @Scheduled job's declaration, a dynamic
 * schedule's, a @RunOnce plan): its policy, the lease a take-over runs with, and its schedule.
 */
export type TakeOverPolicy = Pick<JobDeclaration, 'name' | 'abandoned' | 'maxAttempts' | 'missed'> &
  Partial<Pick<JobDeclaration, 'leaseMs' | 'dynamicSchedule'>> & { heartbeatMs?: number };

/** An abandoned occurrence claimed for this instance, handed to the host to run. */
export interface TakenOverOccurrence {
  scheduledAt: number;
  tenantId?: string;
  /** Its lease, claimed by the scan (sentAt on the timers' hold clock). */
  claim: OccurrenceClaim;
}

/** What the scan needs of the scheduler: its jobs, a way to run a claimed occurrence, and its outcomes. */
export interface AbandonedOccurrenceHost<Job extends TakeOverPolicy = TakeOverPolicy> {
  /** The jobs whose timers run on this instance. */
  enabledJobs(): Job[];
  /** Whether the job is running here now: none of its occurrences is claimed meanwhile. */
  busy?(job: Job): boolean;
  /**
   * Runs a claimed occurrence here with trigger 'take-over' under its claim; not awaited. false:
   * it cannot start here now (the job is running, the scheduler stopping): the scan hands it back.
   */
  takeOver(job: Job, occurrence: TakenOverOccurrence): boolean;
  record(record: JobRunRecord): void;
}

/** How often each instance looks for abandoned occurrences, by default: half the default lease. */
export const DEFAULT_TAKE_OVER_SCAN_MS = 30_000;
/** Occurrences claimed per statement, at most (one per job, or per tenant of a per-tenant job). */
const TAKE_OVER_BATCH = 200;
/**
 * Statements per scan while each comes back full: an instance claims at most 600 occurrences per
 * period, so that the others, whose scans come at other moments of the period, get a share.
 */
const TAKE_OVER_BATCHES_PER_SCAN = 3;
/**
 * Above this many keys (jobs and dynamic schedules run here), a scan first asks which keys have
 * abandoned occurrences (one small read on the lease-expiry index), then claims with only those:
 * sending 100,000 keys every period cost each instance about 0.7 s of CPU per scan, for nothing
 * almost every time.
 */
export const PROBE_ABOVE_KEYS = 500;
/**
 * Keys a probe reads at most: more than a claim takes (TAKE_OVER_BATCH), so that instances
 * scanning together, whose probes find the same keys, still claim disjoint rows (SKIP LOCKED).
 */
const PROBE_KEYS = 5 * TAKE_OVER_BATCH;

/**
 * Finds the scheduled occurrences whose holder stopped heartbeating (a killed process, a lost
 * host) or handed them over on shutdown, and finishes them. Every period, one statement claims a
 * batch for this instance (rows another instance is claiming are skipped, so instances scanning
 * together share them), again while batches come back full (up to TAKE_OVER_BATCHES_PER_SCAN).
 * A claimed occurrence is run again here (same idempotency key, a greater fencing token); a
 * handed-over one always is, a crashed one while it has had fewer than its job's maxAttempts
 * owners and unless its job says `abandoned: 'drop'`, else it is ended FAIL with JOB_ABANDONED
 * (not claimed); one found late likewise. The occurrences of a dynamic schedule removed meanwhile
 * are ended with JOB_SCHEDULE_REMOVED. The row decides: every claim and every end applies only to
 * a row still RUNNING past its lease, so one instance wins and the others write nothing.
 */
export class AbandonedOccurrenceScan<Job extends TakeOverPolicy = TakeOverPolicy> {
  /** The scan, every periodMs. */
  private readonly periodic: PeriodicTask;

  constructor(
    private readonly store: AbandonedOccurrenceStore,
    private readonly host: AbandonedOccurrenceHost<Job>,
    private readonly timers: SchedulerTimers,
    private readonly logger: SchedulerLogger,
    private readonly periodMs: number,
    /** Found later than this (plus a period) after its lease ran out: late, as a missed occurrence is. */
    private readonly lateToleranceMs: number,
  ) {
    this.periodic = new PeriodicTask(
      timers,
      periodMs,
      () => this.scan(),
      (error) => logger.warn(`Could not look for abandoned occurrences: ${String(error)}`),
    );
  }

  /** Arms the periodic scan, when this instance runs any job (again after a job is added; once). */
  start(): void {
    if (this.periodic.started || this.host.enabledJobs().length === 0) return;
    this.periodic.start();
  }

  /** Stops the timer and waits for a scan in progress (the take-overs it started are the host's). */
  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** One scan now: claims (and runs) or ends the abandoned occurrences of this instance's jobs, batch after full batch. */
  async scan(): Promise<void> {
    for (let batch = 0; batch < TAKE_OVER_BATCHES_PER_SCAN && this.periodic.started; batch++) {
      if (!(await this.scanBatch(batch === 0))) return;
    }
  }

  /** One claim statement and what follows from it; true when it claimed a full batch. */
  private async scanBatch(first: boolean): Promise<boolean> {
    const jobs = new Map<string, Job>();
    for (const job of this.host.enabledJobs()) jobs.set(takeOverKeyOf(job.name, prefixOf(job)), job);
    if (jobs.size === 0) return false;
    const dueBy = this.timers.now();
    const probed = await this.probe(jobs, dueBy);
    if (probed && probed.known.length === 0) {
      if (first) await this.endRemoved(probed.unknown);
      return false;
    }
    const keys = (probed?.known ?? [...jobs.values()]).map((job) => this.keyOf(job));
    // On the runner's clock: the claimed leases run from this send.
    const sentAt = (this.timers.holdClock ?? this.timers).now();
    const claiming = this.store.takeOverAbandoned(keys, { dueBy, limit: TAKE_OVER_BATCH });
    this.timers.observe?.(claiming);
    const batch = await claiming;
    const { claimed, toEnd } = batch;
    // After a probe, the unknown keys are those it found (the claim, given only the keys found,
    // would name the others of their codes as unknown).
    const unknown = probed?.unknown ?? batch.unknown;

    const handBack: JobLease[] = [];
    for (const occurrence of claimed) {
      const job = jobs.get(takeOverKeyOf(occurrence.code, runKeyPrefixOf(occurrence.runKey)));
      const key = occurrenceOfRunKey(occurrence.runKey);
      if (!job || !key) {
        await this.endUnreadable(occurrence.code, occurrence.lock);
        continue;
      }
      const claim: OccurrenceClaim = { lock: occurrence.lock, sentAt, correlationId: randomUuid() };
      let started = false;
      try {
        started = this.periodic.started && this.host.takeOver(job, { scheduledAt: key.scheduledAt, tenantId: key.tenantId, claim });
      } catch (error) {
        this.logger.warn(`Could not start the take-over of ${job.name}: ${String(error)}`);
      }
      if (!started) handBack.push(occurrence.lock);
    }
    await Promise.all([this.handBack(handBack), this.end(toEnd, jobs), first ? this.endRemoved(unknown) : undefined]);
    return claimed.length >= TAKE_OVER_BATCH || (probed?.full ?? false);
  }

  /**
   * With more than PROBE_ABOVE_KEYS keys and a store that can tell: the jobs with abandoned
   * occurrences due by `dueBy` (known), the keys found that no job here names (unknown), and
   * whether the read came back full. undefined: no probe (the claim is sent with every key).
   */
  private async probe(
    jobs: ReadonlyMap<string, Job>,
    dueBy: number,
  ): Promise<{ known: Job[]; unknown: Array<{ code: string; prefix: string }>; full: boolean } | undefined> {
    if (jobs.size <= PROBE_ABOVE_KEYS || !this.store.abandonedKeys) return undefined;
    const codes = new Set<string>();
    for (const job of jobs.values()) codes.add(job.name);
    const probing = this.store.abandonedKeys([...codes], { dueBy, limit: PROBE_KEYS });
    this.timers.observe?.(probing);
    const found = await probing;
    const known: Job[] = [];
    const unknown: Array<{ code: string; prefix: string }> = [];
    for (const pair of found) {
      const job = jobs.get(takeOverKeyOf(pair.code, pair.prefix));
      if (job) known.push(job);
      else unknown.push(pair);
    }
    return { known, unknown, full: found.length >= PROBE_KEYS };
  }

  /** The take-over key of a job: which of its occurrences to ask for, and what to do with them. */
  private keyOf(job: Job): TakeOverKey {
    return {
      code: job.name,
      prefix: prefixOf(job),
      ...(job.leaseMs === undefined ? {} : { leaseMs: job.leaseMs }),
      ...(job.heartbeatMs === undefined ? {} : { heartbeatMs: job.heartbeatMs }),
      maxAttempts: job.maxAttempts,
      drop: job.abandoned === 'drop',
      // Late: no instance ran this job for longer than the tolerance after the lease ran out (the
      // fleet was down, or these are rows of an older release); like a missed occurrence it runs
      // only with `missed: 'run-once'`.
      lateMs: job.missed === 'run-once' ? null : this.lateToleranceMs + this.periodMs,
      claimable: !(this.host.busy?.(job) ?? false),
    };
  }

  /**
   * Claimed occurrences that cannot start here go back: RUNNING, lease run out, marked handed over
   * (this owner did not start them), as a stopping instance's claims ahead. The claim counted as an
   * attempt; the mark has the next take-over run them whatever maxAttempts says (a crashed
   * occurrence handed back so gets at most that one run more). Rare: the job started here between
   * the claim's statement and its answer, or the scheduler is stopping.
   */
  private async handBack(leases: JobLease[]): Promise<void> {
    if (leases.length === 0) return;
    try {
      const handed = this.store.expireMany(leases);
      this.timers.observe?.(handed);
      await handed;
    } catch (error) {
      // Their leases run out on their own: taken over all the same, one lease later.
      this.logger.warn(`Could not hand back ${leases.length} occurrence(s) claimed by the take-over: ${String(error)}`);
    }
  }

  /** Ends, unrun, the occurrences the claim reported (drop, maxAttempts, late), and records those this call ended. */
  private async end(occurrences: OccurrenceToEnd[], jobs: ReadonlyMap<string, Job>): Promise<void> {
    if (occurrences.length === 0) return;
    const ends = occurrences.map((occurrence) => {
      const job = jobs.get(takeOverKeyOf(occurrence.code, runKeyPrefixOf(occurrence.runKey)));
      const error = new JobAbandonedError(job?.name ?? occurrence.code, occurrence.attempts, occurrence.reason);
      return { occurrence, job, error };
    });
    const ending = this.store.abandonOccurrences(
      ends.map(({ occurrence, error }) => ({
        id: occurrence.id,
        attempts: occurrence.attempts,
        handedOver: occurrence.handedOver,
        data: { abandoned: true, attempts: occurrence.attempts, error: describe(error) },
      })),
    );
    this.timers.observe?.(ending);
    const applied = await ending;
    ends.forEach(({ occurrence, job, error }, index) => {
      const key = occurrenceOfRunKey(occurrence.runKey);
      if (!applied[index] || !job || !key) return;
      this.host.record({
        name: job.name,
        outcome: 'abandoned',
        scheduledAt: new Date(key.scheduledAt),
        trigger: 'take-over',
        tenantId: key.tenantId,
        ...(key.scheduleId === undefined ? {} : { scheduleId: key.scheduleId }),
        errorCode: error.code,
        error,
      });
    });
  }

  /**
   * The occurrences of dynamic schedules not known here: those of a schedule removed from the
   * store are ended FAIL with JOB_SCHEDULE_REMOVED and recorded; those of a schedule still stored
   * (paused, or not loaded here yet) are left to the instances that run it.
   */
  private async endRemoved(unknown: ReadonlyArray<{ code: string; prefix: string }>): Promise<void> {
    const { liveSchedules } = this.store;
    const schedules = unknown.flatMap(({ code, prefix }) => {
      const scheduleId = scheduleIdOfPrefix(prefix);
      return scheduleId === null ? [] : [{ code, prefix, scheduleId }];
    });
    if (!liveSchedules || schedules.length === 0) return;
    const reading = liveSchedules.call(this.store, [...new Set(schedules.map((schedule) => schedule.scheduleId))]);
    this.timers.observe?.(reading);
    const live = await reading;
    const removed = schedules.filter((schedule) => !live.has(schedule.scheduleId));
    if (removed.length === 0) return;
    const errors = new Map(
      removed.map((schedule) => [takeOverKeyOf(schedule.code, schedule.prefix), new JobScheduleRemovedError(schedule.code, schedule.scheduleId)]),
    );
    const ending = this.store.abandonRunKeyRanges(
      removed.map((schedule) => ({
        code: schedule.code,
        prefix: schedule.prefix,
        data: { abandoned: true, error: describe(errors.get(takeOverKeyOf(schedule.code, schedule.prefix)) as Error & { code: string }) },
      })),
    );
    this.timers.observe?.(ending);
    for (const row of await ending) {
      const key = occurrenceOfRunKey(row.runKey);
      const error = errors.get(takeOverKeyOf(row.code, runKeyPrefixOf(row.runKey)));
      if (!key || key.scheduleId === undefined || !error) continue;
      this.host.record({
        name: row.code,
        outcome: 'abandoned',
        scheduledAt: new Date(key.scheduledAt),
        trigger: 'take-over',
        scheduleId: key.scheduleId,
        errorCode: error.code,
        error,
      });
    }
  }

  /** A claimed occurrence whose runKey this release cannot read: ended FAIL, never run or handed back. */
  private async endUnreadable(code: string, lease: JobLease & { attempt: number }): Promise<void> {
    const error = new JobAbandonedError(code, lease.attempt - 1, 'unreadable');
    try {
      const ending = this.store.fail(lease, { abandoned: true, error: describe(error) });
      this.timers.observe?.(ending);
      await ending;
      this.logger.warn(error.message);
    } catch (failure) {
      this.logger.warn(`Could not end an unreadable occurrence of ${code}: ${String(failure)}`);
    }
  }
}

/** The runKey prefix of a job's occurrences: its dynamic schedule's, or '' (declared). */
const prefixOf = (job: TakeOverPolicy): string => (job.dynamicSchedule ? scheduleRunKeyPrefix(job.dynamicSchedule.id) : '');

const describe = (error: Error & { code: string }) => ({ name: error.name, code: error.code, message: error.message });
