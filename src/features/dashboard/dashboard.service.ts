import { Inject, Injectable, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { RunOnceExplorer } from '../integrations/nest-schedule/run-once.explorer';
import { LibraryLogger } from '../job-scheduler/log-text';
import type { DueSchedule } from '../scheduling/schedule/due-schedule';
import { JobRunsInspector } from '../job-scheduler/operations/job-runs.inspector';
import type { JobRunFilter } from '../job-scheduler/operations/job-run.types';
import type { HealthWindowRow } from '../job-scheduler/operations/occurrence-history.sql';
import { ScheduledJobsService } from '../scheduling/scheduled-jobs.service';
import { dueInstantOf } from '../scheduling/occurrence/occurrence-keys';
import { schedulingErrors } from '../scheduling/scheduling.errors';
import { JobSchedulerDashboardSchedules } from './dashboard-schedules';
import { buildTimeline, type Timeline } from './dashboard-timeline';
import { HEALTH_DAY_MS, HEALTH_WINDOW_ROWS, healthWindowOf, type JobHealthState, lastSuccessOf, stateOf, stateWindowOf, windowState } from './dashboard-health';
import {
  type DashboardExpiredLease,
  type DashboardJob,
  type DashboardJobsPage,
  type DashboardRunDetail,
  type DashboardRunSummary,
  expiredLease,
  runDetail,
  runSummary,
} from './dashboard-views';
import type { JobsQuery } from './dashboard-query';
import { DASHBOARD_OPTIONS, type DashboardActionEntry, type ResolvedDashboardOptions } from './dashboard.options';
import { describeSchedule, nextDueInstants } from './schedule-words';

/** Jobs in a page of the jobs list by default (the windows of 50 jobs stay under jit_above_cost). */
export const JOBS_PAGE_SIZE = 50;
/** Failing jobs listed at most (the count says how many there are in all). */
const FAILING_LISTED = 25;

/** A job the dashboard lists, before its health is read. */
interface ListedJob {
  name: string;
  kind: 'declared' | 'run-once';
  method: string | null;
  schedule: DueSchedule;
}

/** A job's place in the list (declared jobs, then @RunOnce methods, each by name), and the cursor of the page that ends with it. */
const jobCursor = (job: Pick<ListedJob, 'name' | 'kind'>): string => `${job.kind}:${job.name}`;

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

  /**
   * A page of the jobs (declared and @RunOnce, by name; `after` is the previous page's cursor, `q`
   * a part of the name) with schedule, next due instants, last success and health window, and the
   * failing jobs among ALL of them (the 25 first by name). Every job's state (and a failing job's
   * last error) is read from its 10 newest finished occurrences, in one cheap statement beside the
   * windows of the page (300 rows a job): at 1,000 jobs, 50 windows instead of 1,000.
   */
  async jobs(query: JobsQuery = {}, now = Date.now()): Promise<DashboardJobsPage> {
    const limit = query.limit ?? JOBS_PAGE_SIZE;
    const all = this.listedJobs();
    const needle = query.q?.toLowerCase();
    const matching = needle === undefined ? all : all.filter((job) => job.name.toLowerCase().includes(needle));
    const start = query.after === undefined ? 0 : matching.findIndex((job) => jobCursor(job) > (query.after ?? ''));
    const page = start < 0 ? [] : matching.slice(start, start + limit);
    const more = start >= 0 && start + limit < matching.length;

    const scheduled = this.scheduled;
    const [states, windows, stale, pauses] = await Promise.all([
      this.inspector.healthStates(all.map((job) => job.name)),
      this.healthWindows(
        page.map((job) => job.name),
        now,
      ),
      scheduled ? scheduled.jobHealth() : Promise.resolve([]),
      scheduled ? scheduled.pausedJobs() : Promise.resolve([]),
    ]);
    const pauseOf = new Map(pauses.map((pause) => [pause.name, pause]));
    const switchedOn = (name: string): boolean => scheduled?.isEnabled(name) ?? true;
    const enabled = (job: ListedJob): boolean => job.kind === 'run-once' || (switchedOn(job.name) && !pauseOf.has(job.name));
    const failing = all.filter((job) => enabled(job) && stateOf(states.get(job.name)) === 'failing');
    const shownFailing = failing.slice(0, FAILING_LISTED);
    const staleOf = new Map(stale.map((entry) => [entry.name, entry]));
    const view = (job: ListedJob): DashboardJob => {
      const row = windows.get(job.name);
      const window = healthWindowOf(row);
      let health: JobHealthState = windowState(window);
      const lastOutcome = row?.lastOutcome ?? null;
      if (job.kind === 'run-once') return { ...this.runOnceJob(job, now), lastSuccessAt: lastSuccessOf(row), lastOutcome, health, window };
      const pause = pauseOf.get(job.name);
      const entry = staleOf.get(job.name);
      if (!enabled(job)) health = 'disabled';
      else if (health !== 'failing' && entry?.stale) health = 'late';
      return {
        name: job.name,
        kind: 'declared',
        method: null,
        schedule: describeSchedule(job.schedule),
        nextDue: enabled(job) ? nextDueInstants(job.schedule, now).map((date) => date.toISOString()) : [],
        lastSuccessAt: entry?.lastSuccessAt?.toISOString() ?? lastSuccessOf(row),
        lastOutcome,
        health,
        window,
        paused: pause ? { by: pause.pausedBy, at: pause.pausedAt.toISOString() } : null,
        disabledBySettings: !pause && !switchedOn(job.name),
        actions: { runNow: true, pause: true, why: null },
      };
    };
    return {
      jobs: page.map(view),
      nextCursor: more && page.length ? jobCursor(page[page.length - 1]) : null,
      total: matching.length,
      pageSize: limit,
      failing: shownFailing.map((job) => ({ name: job.name, kind: job.kind, window: stateWindowOf(states.get(job.name)) })),
      failingTotal: failing.length,
    };
  }

  /** Every job the dashboard lists, declared and @RunOnce, by name (then kind). */
  private listedJobs(): ListedJob[] {
    const declared: ListedJob[] = (this.scheduled?.declarations ?? []).map(({ name, schedule }) => ({ name, kind: 'declared', method: null, schedule }));
    const runOnce: ListedJob[] = this.runOnceMethods().map(({ name, method, schedule }) => ({ name, kind: 'run-once', method, schedule }));
    return [...declared, ...runOnce].sort((a, b) => (jobCursor(a) < jobCursor(b) ? -1 : 1));
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

  /** A @RunOnce method as a job (health set by the caller); no run now or pause: its timer is @nestjs/schedule's. */
  private runOnceJob(job: ListedJob, now: number): Omit<DashboardJob, 'lastSuccessAt' | 'lastOutcome' | 'health' | 'window'> {
    return {
      name: job.name,
      kind: 'run-once',
      method: job.method,
      schedule: describeSchedule(job.schedule),
      nextDue: nextDueInstants(job.schedule, now).map((date) => date.toISOString()),
      paused: null,
      disabledBySettings: false,
      actions: { runNow: false, pause: false, why: '@RunOnce: @nestjs/schedule runs it on its timer; there is no run now or pause' },
    };
  }

  /** Each job's health window over its newest HEALTH_WINDOW_ROWS occurrences, computed by PostgreSQL: one row per job. */
  private healthWindows(names: readonly string[], now: number): Promise<Map<string, HealthWindowRow>> {
    return this.inspector.healthWindows(names, HEALTH_WINDOW_ROWS, new Date(now - HEALTH_DAY_MS));
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
