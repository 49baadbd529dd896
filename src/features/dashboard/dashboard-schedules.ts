import { Injectable, Optional } from '@nestjs/common';
import { JobRunsInspector } from '../job-scheduler/operations/job-runs.inspector';
import { DynamicSchedules } from '../scheduling/dynamic/dynamic-schedules.service';
import type { DynamicScheduleView } from '../scheduling/dynamic/dynamic-schedule.types';
import { dueInstantOf, scheduleRunKeyPrefix } from '../scheduling/occurrence/occurrence-keys';
import { compileSchedule } from '../scheduling/schedule/job-declaration';
import type { DueSchedule } from '../scheduling/schedule/due-schedule';
import { dueCountSince } from '../scheduling/schedule/due-instants';
import { DeclarationError, SchedulingError } from '../scheduling/scheduling.errors';
import { HEALTH_DAY_MS, HEALTH_WINDOW_ROWS, healthWindowOf, type JobHealthState, type JobHealthWindow, lastSuccessOf, windowState } from './dashboard-health';
import { buildTimeline, type Timeline } from './dashboard-timeline';
import { describeSchedule, nextDueInstants, type ScheduleDescription } from './schedule-words';

/** A dynamic schedule as the dashboard lists it. */
export interface DashboardSchedule {
  id: string;
  handler: string;
  schedule: ScheduleDescription;
  /** The next three due instants (none while disabled). */
  nextDue: string[];
  enabled: boolean;
  tenantId: string | null;
  modifiedAt: string;
  /** When its newest success (among its newest HEALTH_WINDOW_ROWS occurrences) was due, or null. */
  lastSuccessAt: string | null;
  /** How its newest finished occurrence ended, or null before one finished. */
  lastOutcome: 'succeeded' | 'failed' | 'missed' | 'taken-over' | null;
  /**
   * As a job's: disabled while paused; failing, degraded or ok by its window; late when two or more
   * occurrences were due since its last success (or its last change, if later) and it is not failing.
   */
  health: JobHealthState;
  window: JobHealthWindow;
}

/** The schedules list's query: a keyset cursor, an id prefix, a handler, a tenant. */
export interface ScheduleQuery {
  after?: string;
  idPrefix?: string;
  handler?: string;
  tenantId?: string;
}

/** Rows a dynamic schedule's timeline reads at most, the newest. */
const MAX_SCHEDULE_TIMELINE_ROWS = 12_000;

const dueScheduleOf = (view: DynamicScheduleView): DueSchedule =>
  compileSchedule(view.handler, view.every === undefined ? { cron: view.cron, timeZone: view.timeZone } : { every: view.every });

/**
 * How the list shows a schedule: in words with its next instants, or, for a row stored by an
 * earlier release that today's checks refuse (an interval past 8 years), why no instance runs it.
 */
const listedSchedule = (view: DynamicScheduleView, now: number): Pick<DashboardSchedule, 'schedule' | 'nextDue'> & { due: DueSchedule | null } => {
  let schedule: DueSchedule;
  try {
    schedule = dueScheduleOf(view);
  } catch (error) {
    if (!(error instanceof DeclarationError)) throw error;
    const expression = view.every === undefined ? (view.cron ?? '') : `${view.every} ms`;
    const reason = error.message.replace(/^Scheduled job "[^"]*": /, '');
    return {
      schedule: { kind: view.every === undefined ? 'cron' : 'every', expression, words: `not run: ${reason}`, timeZone: view.timeZone ?? null },
      nextDue: [],
      due: null,
    };
  }
  return { schedule: describeSchedule(schedule), nextDue: view.enabled ? nextDueInstants(schedule, now).map((date) => date.toISOString()) : [], due: schedule };
};

/**
 * Late: two occurrences due since the last success, or since the schedule's last change when that
 * is later (a schedule resumed after a long pause is not late at once), as a declared job's stale.
 */
const isLate = (due: DueSchedule, lastSuccessAt: string | null, modifiedAt: Date, now: number): boolean =>
  dueCountSince(due, Math.max(lastSuccessAt === null ? Number.NEGATIVE_INFINITY : Date.parse(lastSuccessAt), modifiedAt.getTime()), now, 2) >= 2;

/** A schedule's health: disabled while paused, else its window's state, late as isLate says (failing first). */
const scheduleHealth = (view: DynamicScheduleView, due: DueSchedule | null, window: JobHealthWindow, lastSuccessAt: string | null, now: number) => {
  if (!view.enabled) return 'disabled' as const;
  const state = windowState(window);
  return state !== 'failing' && due !== null && isLate(due, lastSuccessAt, view.modifiedAt, now) ? ('late' as const) : state;
};

/** The dynamic schedules (DynamicSchedulesModule), when the application has them: a page of them, and one's timeline. */
@Injectable()
export class JobSchedulerDashboardSchedules {
  constructor(
    private readonly inspector: JobRunsInspector,
    @Optional() private readonly dynamic?: DynamicSchedules,
  ) {}

  /** Schedules in id order, 100 at a time after `after` (a keyset cursor), filtered (empty without DynamicSchedulesModule). */
  async page(query: ScheduleQuery, now = Date.now()): Promise<{ schedules: DashboardSchedule[]; nextCursor: string | null }> {
    if (!this.dynamic) return { schedules: [], nextCursor: null };
    const page = await this.dynamic.list({ ...query, limit: 100 });
    // Every schedule's window in one statement: its handler's code, its runKey prefix.
    const rows = await this.inspector.prefixedHealthWindows(
      page.schedules.map((view) => ({ code: view.handler, prefix: scheduleRunKeyPrefix(view.id) })),
      HEALTH_WINDOW_ROWS,
      new Date(now - HEALTH_DAY_MS),
    );
    const schedules = page.schedules.map((view, index): DashboardSchedule => {
      const { due, ...listed } = listedSchedule(view, now);
      const window = healthWindowOf(rows[index]);
      const lastSuccessAt = lastSuccessOf(rows[index]);
      return {
        id: view.id,
        handler: view.handler,
        ...listed,
        enabled: view.enabled,
        tenantId: view.tenantId ?? null,
        modifiedAt: view.modifiedAt.toISOString(),
        lastSuccessAt,
        lastOutcome: rows[index]?.lastOutcome ?? null,
        health: scheduleHealth(view, due, window, lastSuccessAt, now),
        window,
      };
    });
    return { schedules, nextCursor: page.nextCursor ?? null };
  }

  /** A dynamic schedule's occurrences over the last `spanMs` (runNow runs are not in it). UNKNOWN_JOB when there is no such schedule. */
  async timeline(id: string, spanMs: number, now = Date.now()): Promise<Timeline> {
    const view = this.dynamic ? await this.dynamic.get(id) : null;
    if (!view) throw new SchedulingError('UNKNOWN_JOB', `No dynamic schedule has the id ${JSON.stringify(id.slice(0, 80))}`);
    const prefix = scheduleRunKeyPrefix(view.id);
    const from = now - spanMs;
    const [rows, firstKey] = await Promise.all([
      this.inspector.findOccurrences(view.handler, new Date(from), new Date(now), MAX_SCHEDULE_TIMELINE_ROWS + 1, prefix),
      this.inspector.firstOccurrenceKey(view.handler, prefix),
    ]);
    const keyed = rows.map((row) => ({ ...row, runKey: row.runKey.slice(prefix.length) }));
    // Deployed: created, or its first recorded occurrence if earlier (a schedule deleted and made again).
    const first = firstKey === null ? null : dueInstantOf(firstKey.slice(prefix.length));
    const knownSince = Math.min(first ?? Number.POSITIVE_INFINITY, view.createdAt.getTime());
    return buildTimeline(keyed, dueScheduleOf(view), { from, to: now, readLimit: MAX_SCHEDULE_TIMELINE_ROWS, knownSince });
  }

  /** Pauses (false) or resumes (true) a dynamic schedule on every instance. UNKNOWN_JOB when there is no such schedule. */
  async setEnabled(id: string, enabled: boolean): Promise<{ applied: boolean }> {
    const view = this.dynamic ? await this.dynamic.setEnabled(id, enabled) : null;
    if (!view) throw new SchedulingError('UNKNOWN_JOB', `No dynamic schedule has the id ${JSON.stringify(id.slice(0, 80))}`);
    return { applied: true };
  }

  /** Runs a dynamic schedule's handler once, now, on this instance; resolves to its run once started. UNKNOWN_JOB when there is no such schedule. */
  async start(id: string): Promise<{ running: Promise<readonly { outcome: string }[]> }> {
    const view = this.dynamic ? await this.dynamic.get(id) : null;
    if (!this.dynamic || !view) throw new SchedulingError('UNKNOWN_JOB', `No dynamic schedule has the id ${JSON.stringify(id.slice(0, 80))}`);
    return { running: this.dynamic.runNow(view.id) };
  }
}
