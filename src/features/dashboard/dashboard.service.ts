import { Inject, Injectable, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { RunOnceExplorer } from '../integrations/nest-schedule/run-once.explorer';
import { LibraryLogger } from '../job-scheduler/log-text';
import type { DueSchedule } from '../scheduling/schedule/due-schedule';
import { JobRunsInspector } from '../job-scheduler/operations/job-runs.inspector';
import type { JobRunFilter } from '../job-scheduler/operations/job-run.types';
import { ScheduledJobsService } from '../scheduling/scheduled-jobs.service';
import { dueInstantOf } from '../scheduling/occurrence/occurrence-keys';
import { schedulingErrors } from '../scheduling/scheduling.errors';
import { JobSchedulerDashboardSchedules } from './dashboard-schedules';
import { buildTimeline, type Timeline } from './dashboard-timeline';
import { HEALTH_DAY_MS, HEALTH_WINDOW_ROWS, healthWindowOf, type JobHealthState, lastSuccessOf, windowState } from './dashboard-health';
import {
  type DashboardExpiredLease,
  type DashboardJob,
  type DashboardRunDetail,
  type DashboardRunSummary,
  expiredLease,
  runDetail,
  runSummary,
} from './dashboard-views';
import { DASHBOARD_OPTIONS, type DashboardActionEntry, type ResolvedDashboardOptions } from './dashboard.options';
import { describeSchedule, nextDueInstants } from './schedule-words';

/** Rows a timeline reads at most, the newest (a job every minute has 10,080 occurrences in 7 days). */
const MAX_TIMELINE_ROWS = 12_000;
/** How long "run now" waits for the run to finish before answering (it goes on regardless). */
const RUN_NOW_WAIT_MS = 2_000;

/** The outcomes of a run if it settles within `ms` (null otherwise: it goes on); a failure to start is logged. */
const settledWithin = async (running: Promise<readonly { outcome: string }[]>, ms: number, onError: (error: unknown) => void): Promise<string[] | null> => {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  const settled = running.then(
    (records) => records.map((record) => record.outcome),
    (error: unknown) => {
      onError(error);
      return [];
    },
  );
  return Promise.race([settled, waited]).finally(() => clearTimeout(timer));
};

/** A printable, bounded actor name for the log. */
// eslint-disable-next-line no-control-regex -- control characters are what it replaces
const printable = (actor: string): string => actor.replace(/[\u0000-\u001f\u007f]/g, '?').slice(0, 256);

/** What the dashboard reads and does, over ScheduledJobsService (when the app declares jobs) and JobRunsInspector. */
@Injectable()
export class JobSchedulerDashboardService {
  private readonly logger = new LibraryLogger('JobSchedulerDashboard');
  /** When this instance set the dashboard up: its jobs are deployed at the latest then. */
  private readonly startedAt = Date.now();

  constructor(
    private readonly inspector: JobRunsInspector,
    @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    private readonly schedules: JobSchedulerDashboardSchedules,
    private readonly moduleRef: ModuleRef,
    @Optional() private readonly scheduled?: ScheduledJobsService,
  ) {}

  /** The declared jobs with their schedule, next due instants, last success and health. */
  async jobs(now = Date.now()): Promise<DashboardJob[]> {
    const [declared, runOnce] = await Promise.all([this.declaredJobs(now), this.runOnceJobs(now)]);
    return [...declared, ...runOnce];
  }

  /** The @RunOnce methods (RunOnceModule), when the application has some. */
  private runOnceMethods(): ReadonlyArray<{ name: string; method: string; schedule: DueSchedule }> {
    let explorer: RunOnceExplorer | undefined;
    try {
      explorer = this.moduleRef.get(RunOnceExplorer, { strict: false });
    } catch {
      return []; // no RunOnceModule in this application
    }
    return explorer?.methods ?? [];
  }

  /** @RunOnce methods as jobs: their schedule, next ticks, last success and health; no run now or pause (their timer is @nestjs/schedule's). */
  private async runOnceJobs(now: number): Promise<DashboardJob[]> {
    const methods = this.runOnceMethods();
    if (methods.length === 0) return [];
    const windows = await this.healthWindows(
      methods.map((method) => method.name),
      now,
    );
    return methods.map(({ name, method, schedule }) => {
      const window = healthWindowOf(windows.get(name));
      return {
        name,
        kind: 'run-once' as const,
        method,
        schedule: describeSchedule(schedule),
        nextDue: nextDueInstants(schedule, now).map((date) => date.toISOString()),
        lastSuccessAt: lastSuccessOf(windows.get(name)),
        health: windowState(window),
        window,
        paused: null,
        disabledBySettings: false,
        actions: { runNow: false, pause: false, why: '@RunOnce: @nestjs/schedule runs it on its timer; there is no run now or pause' },
      };
    });
  }

  /** Each job's health window over its newest HEALTH_WINDOW_ROWS occurrences, computed by PostgreSQL: one row per job. */
  private healthWindows(names: readonly string[], now: number) {
    return this.inspector.healthWindows(names, HEALTH_WINDOW_ROWS, new Date(now - HEALTH_DAY_MS));
  }

  private async declaredJobs(now: number): Promise<DashboardJob[]> {
    const scheduled = this.scheduled;
    if (!scheduled) return [];
    const declarations = scheduled.declarations;
    const [health, pauses, windows] = await Promise.all([
      scheduled.jobHealth(),
      scheduled.pausedJobs(),
      this.healthWindows(
        declarations.map((declaration) => declaration.name),
        now,
      ),
    ]);
    const healthOf = new Map(health.map((entry) => [entry.name, entry]));
    const pauseOf = new Map(pauses.map((pause) => [pause.name, pause]));
    return declarations.map((declaration) => {
      const { name } = declaration;
      const pause = pauseOf.get(name);
      const entry = healthOf.get(name);
      const enabled = scheduled.isEnabled(name) && !pause;
      const window = healthWindowOf(windows.get(name));
      let state: JobHealthState = windowState(window);
      if (!enabled) state = 'disabled';
      else if (state !== 'failing' && entry?.stale) state = 'late';
      return {
        name,
        kind: 'declared' as const,
        method: null,
        schedule: describeSchedule(declaration.schedule),
        nextDue: enabled ? nextDueInstants(declaration.schedule, now).map((date) => date.toISOString()) : [],
        lastSuccessAt: entry?.lastSuccessAt?.toISOString() ?? null,
        health: state,
        window,
        paused: pause ? { by: pause.pausedBy, at: pause.pausedAt.toISOString() } : null,
        disabledBySettings: !pause && !scheduled.isEnabled(name),
        actions: { runNow: true, pause: true, why: null },
      };
    });
  }

  /** A declared job's occurrences over the last `spanMs`. SchedulingError UNKNOWN_JOB otherwise. */
  async timeline(name: string, spanMs: number, now = Date.now()): Promise<Timeline> {
    const schedule =
      this.scheduled?.declarations.find((candidate) => candidate.name === name)?.schedule ??
      this.runOnceMethods().find((candidate) => candidate.name === name)?.schedule;
    if (!schedule) throw schedulingErrors.unknownJob(name);
    const from = now - spanMs;
    const [rows, firstKey] = await Promise.all([
      this.inspector.findOccurrences(name, new Date(from), new Date(now), MAX_TIMELINE_ROWS + 1),
      this.inspector.firstOccurrenceKey(name),
    ]);
    // Deployed: the first occurrence any instance recorded, or this instance's start if earlier.
    const first = firstKey === null ? null : dueInstantOf(firstKey);
    const knownSince = Math.min(first ?? Number.POSITIVE_INFINITY, this.startedAt);
    return buildTimeline(rows, schedule, { from, to: now, readLimit: MAX_TIMELINE_ROWS, knownSince });
  }

  async runs(filter: JobRunFilter): Promise<{ runs: DashboardRunSummary[]; nextCursor: string | null }> {
    const page = await this.inspector.findRuns(filter);
    return { runs: page.runs.map(runSummary), nextCursor: page.nextCursor ?? null };
  }

  async run(id: string): Promise<DashboardRunDetail | null> {
    const run = await this.inspector.getRunById(id);
    return run ? runDetail(run) : null;
  }

  async expiredLeases(): Promise<DashboardExpiredLease[]> {
    return (await this.inspector.findExpiredLeases(100)).map(expiredLease);
  }

  /** Starts a declared job now; answers with its outcomes if it finishes within 2 s (it goes on otherwise). */
  async runNow(name: string, actor: string): Promise<{ finished: boolean; outcomes: string[] }> {
    const running = this.declared(name).runNow(name);
    this.record({ action: 'run-now', actor, target: name, applied: true, at: new Date() });
    const outcomes = await settledWithin(running, RUN_NOW_WAIT_MS, (error) => this.logger.warn(`run now of ${name} failed: ${String(error)}`));
    return outcomes === null ? { finished: false, outcomes: [] } : { finished: true, outcomes };
  }

  /** As runNow, for a dynamic schedule (its handler runs once on this instance). */
  async runScheduleNow(id: string, actor: string): Promise<{ finished: boolean; outcomes: string[] }> {
    const { running } = await this.schedules.start(id);
    this.record({ action: 'run-now', actor, target: `schedule ${id}`, applied: true, at: new Date() });
    const outcomes = await settledWithin(running, RUN_NOW_WAIT_MS, (error) => this.logger.warn(`run now of schedule ${id} failed: ${String(error)}`));
    return outcomes === null ? { finished: false, outcomes: [] } : { finished: true, outcomes };
  }

  /** Pauses (false) or resumes (true) a dynamic schedule, persisted in its table. */
  async setScheduleEnabled(id: string, enabled: boolean, actor: string): Promise<{ applied: boolean }> {
    const result = await this.schedules.setEnabled(id, enabled);
    this.record({ action: enabled ? 'resume' : 'pause', actor, target: `schedule ${id}`, applied: result.applied, at: new Date() });
    return result;
  }

  async pause(name: string, actor: string): Promise<{ applied: boolean }> {
    const applied = await this.declared(name).pauseJob(name, printable(actor));
    this.record({ action: 'pause', actor, target: name, applied, at: new Date() });
    return { applied };
  }

  async resume(name: string, actor: string): Promise<{ applied: boolean }> {
    const applied = await this.declared(name).resumeJob(name);
    this.record({ action: 'resume', actor, target: name, applied, at: new Date() });
    return { applied };
  }

  /** Frees a stuck lease if it still has the fencing token the operator saw. */
  async release(id: string, fencingToken: number, actor: string): Promise<{ applied: boolean }> {
    const applied = await this.inspector.releaseStuckLease(id, fencingToken, { released: true, by: printable(actor), fencingToken });
    this.record({ action: 'release', actor, target: id, applied, at: new Date() });
    return { applied };
  }

  private declared(name: string): ScheduledJobsService {
    if (!this.scheduled || !this.scheduled.jobNames.includes(name)) throw schedulingErrors.unknownJob(name);
    return this.scheduled;
  }

  private record(entry: DashboardActionEntry): void {
    const logged = { ...entry, actor: printable(entry.actor) };
    this.logger.log(`${logged.actor}: ${entry.action} ${entry.target}${entry.applied ? '' : ' (not applied)'}`);
    try {
      this.options.onAction?.(logged);
    } catch (error) {
      this.logger.error(`onAction threw: ${String(error)}`);
    }
  }
}
