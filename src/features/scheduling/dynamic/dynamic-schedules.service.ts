import { type BeforeApplicationShutdown, Inject, Injectable, type OnApplicationBootstrap, type OnModuleInit, Optional } from '@nestjs/common';
import { LibraryLogger } from '../../job-scheduler/log-text';
import { DiscoveryService } from '@nestjs/core';
import { JOB_SCHEDULER_DATA_SOURCE } from '../../job-scheduler/job-scheduler.constants';
import { JOB_SCHEDULER_MODULE_OPTIONS } from '../../job-scheduler/job-scheduler.module-definition';
import type { JobSchedulerRuntimeOptions } from '../../job-scheduler/job-scheduler.options';
import { JobSchedulerService } from '../../job-scheduler/job-scheduler.service';
import type { JobSchedulerDatabase } from '../../job-scheduler/lease-database';
import { JobScheduleEngine } from '../job-schedule-engine';
import type { JobHandler } from '../occurrence/occurrence-runner';
import { createPrometheusJobMetrics } from '../records/prometheus-job-metrics';
import { longestGapMs, resolveScheduledRetention, retentionPasses, type RetainedJob } from '../retention/scheduled-retention';
import { ScheduledRetentionTimer } from '../retention/scheduled-retention.timer';
import { systemTimers, withLiveSchedules } from '../scheduler-ports';
import { schedulingErrors } from '../scheduling.errors';
import type { JobRunListener, JobRunRecord } from '../scheduling.types';
import { checkScheduleInputs, chunkScheduleRows } from './dynamic-schedule-batch';
import { checkScheduleId, checkScheduleInput, type DeclarationMemo, viewOfSchedule } from './dynamic-schedule-input';
import { dynamicScheduleHistory } from './dynamic-schedule-history';
import { DynamicScheduleStore } from './dynamic-schedule.store';
import type {
  DynamicScheduleExecution,
  DynamicScheduleFilter,
  DynamicScheduleHandler,
  DynamicScheduleInput,
  DynamicSchedulePage,
  DynamicScheduleView,
  DynamicSchedulesModuleOptions,
} from './dynamic-schedule.types';
import { DYNAMIC_SCHEDULES_MODULE_OPTIONS } from './dynamic-schedules.module-definition';
import { scheduleHandlerOf } from './schedule-handler.decorator';
import { ScheduleSync } from './schedule-sync';

/** The lease code under which the dynamic schedules' retention runs. */
export const DYNAMIC_RETENTION_CODE = 'scheduling.dynamic-retention';
const DEFAULT_CHANGE_POLL_MS = 2_000;
/** Dynamic schedules are many and often due together: their claims go out this long before the instant. */
export const DEFAULT_DYNAMIC_CLAIM_AHEAD_MS = 3_000;
const MAX_PAGE = 1_000;

/**
 * Schedules created at runtime and stored in PostgreSQL: upsert, remove, get, list. Every
 * instance runs them (each occurrence once across the fleet, claimed in batches), sees a change
 * within `changePollMs`, and keeps them across restarts. A write is validated before any SQL and
 * applies on this instance at once.
 */
@Injectable()
export class DynamicSchedules implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new LibraryLogger('DynamicSchedules');
  private readonly engine: JobScheduleEngine;
  private readonly store: DynamicScheduleStore;
  private readonly handlers = new Map<string, JobHandler>();
  private readonly sync: ScheduleSync;
  private readonly retention?: ScheduledRetentionTimer;

  constructor(
    @Inject(DYNAMIC_SCHEDULES_MODULE_OPTIONS) private readonly options: DynamicSchedulesModuleOptions,
    private readonly discovery: DiscoveryService,
    private readonly jobs: JobSchedulerService,
    @Inject(JOB_SCHEDULER_DATA_SOURCE) database: JobSchedulerDatabase,
    @Optional() @Inject(JOB_SCHEDULER_MODULE_OPTIONS) leaseOptions: JobSchedulerRuntimeOptions = {},
  ) {
    const pollMs = options.changePollMs ?? DEFAULT_CHANGE_POLL_MS;
    if (!Number.isSafeInteger(pollMs) || pollMs < 10) throw schedulingErrors.invalidOption('changePollMs', 'a whole number of ms, 10 or more', pollMs);
    const lateToleranceMs = options.lateToleranceMs ?? 60_000;
    this.store = new DynamicScheduleStore(database, leaseOptions);
    this.engine = new JobScheduleEngine({
      timers: systemTimers,
      lease: jobs,
      history: dynamicScheduleHistory(jobs, (id) => this.engine.job(id)?.declaration.name),
      metrics: options.metrics === false ? undefined : createPrometheusJobMetrics(typeof options.metrics === 'object' ? options.metrics.registry : undefined),
      logger: this.logger,
      lateToleranceMs,
      shutdownGraceMs: options.shutdownGraceMs,
      failureLogIntervalMs: options.failureLogIntervalMs,
      // Occurrences of a schedule removed before their take-over are ended (JOB_SCHEDULE_REMOVED).
      abandoned: withLiveSchedules(jobs, (ids) => this.store.live(ids)),
      takeOverScanMs: options.takeOverScanMs,
      claimAheadMs: options.claimAheadMs ?? DEFAULT_DYNAMIC_CLAIM_AHEAD_MS,
      claimAheadScales: options.claimAheadMs === undefined,
    });
    this.sync = new ScheduleSync(this.store, this.engine, this.handlers, systemTimers, this.logger, pollMs);
    const retention = resolveScheduledRetention(options.retention, lateToleranceMs);
    if (retention) {
      const passes = () => retentionPasses(this.retainedHandlers(), retention, lateToleranceMs, Date.now());
      this.retention = new ScheduledRetentionTimer(jobs, systemTimers, retention, passes, this.logger, DYNAMIC_RETENTION_CODE);
    }
  }

  async onModuleInit(): Promise<void> {
    // Before the schedules load (bootstrap): a missing table, column or sequence fails the boot, named, once.
    await this.store.checkSchema(this.logger);
    for (const wrapper of this.discovery.getProviders()) {
      const name = scheduleHandlerOf(wrapper.metatype);
      if (name === undefined || !wrapper.instance) continue;
      const className = (wrapper.metatype as { name: string }).name;
      if (this.handlers.has(name)) throw schedulingErrors.duplicate(name, 'an earlier @ScheduleHandler', className);
      const instance = wrapper.instance as DynamicScheduleHandler;
      if (typeof instance.run !== 'function') throw schedulingErrors.notAJob(name, className);
      this.handlers.set(name, (execution) => instance.run(execution as DynamicScheduleExecution));
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.options.start === false) return;
    const loaded = await this.sync.load();
    await this.engine.start();
    this.sync.start();
    this.retention?.start();
    this.logger.log(`Started ${loaded} dynamic schedule(s) of ${this.handlers.size} handler(s)`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.retention?.stop();
    await this.sync.stop();
    await this.engine.stop();
  }

  /** Creates or replaces the schedule `input.id`; every instance follows it within changePollMs. Throws DeclarationError before any SQL. */
  async upsert(input: DynamicScheduleInput): Promise<DynamicScheduleView> {
    const { row } = checkScheduleInput(input, (name) => this.handlers.has(name));
    const stored = await this.store.upsert(row);
    if (this.options.start !== false) await this.sync.apply({ ...stored, removed: false });
    return viewOfSchedule(stored);
  }

  /**
   * `upsert` of many schedules, a statement per chunk of 1,000 (not a round trip each): each
   * schedule as `upsert` writes it (its own version: every instance follows it within
   * changePollMs). Every input is checked before any SQL; an invalid one, or an id given twice,
   * throws DynamicScheduleBatchError (its index and id) and nothing is written. Each chunk commits
   * on its own: a database error part-way leaves the chunks before it written (calling again
   * with the same inputs is safe). The views come back in the inputs' order.
   */
  async upsertMany(inputs: readonly DynamicScheduleInput[]): Promise<DynamicScheduleView[]> {
    const rows = checkScheduleInputs(inputs, (name) => this.handlers.has(name));
    const stored = new Map<string, DynamicScheduleView>();
    const memo: DeclarationMemo = new Map();
    for (const chunk of chunkScheduleRows(rows)) {
      for (const row of await this.store.upsertMany(chunk)) {
        if (this.options.start !== false) await this.sync.apply({ ...row, removed: false }, memo);
        stored.set(row.id, viewOfSchedule(row));
      }
    }
    return rows.map((row) => stored.get(row.id) as DynamicScheduleView);
  }

  /** Removes the schedule: no occurrence of it starts once each instance has seen it (a run in progress finishes). False if there was none. */
  async remove(id: string): Promise<boolean> {
    const version = await this.store.remove(checkScheduleId(id));
    if (version === null) return false;
    if (this.options.start !== false) await this.sync.apply({ id, version, removed: true });
    return true;
  }

  /**
   * Pauses (false) or resumes (true) a schedule without changing anything else, on every instance
   * within changePollMs; null when there is no such schedule. Resumed, it does not replay what
   * passed while it was paused (unless its missed policy is 'run-once': then the latest, once).
   */
  async setEnabled(id: string, enabled: boolean): Promise<DynamicScheduleView | null> {
    if (typeof enabled !== 'boolean') throw schedulingErrors.invalidOption('enabled', 'a boolean', enabled);
    const stored = await this.store.setEnabled(checkScheduleId(id), enabled);
    if (!stored) return null;
    if (this.options.start !== false) await this.sync.apply({ ...stored, removed: false });
    return viewOfSchedule(stored);
  }

  async get(id: string): Promise<DynamicScheduleView | null> {
    const row = await this.store.get(checkScheduleId(id));
    return row ? viewOfSchedule(row) : null;
  }

  /** Schedules in id order (bytewise), `limit` at a time (default 100, at most 1,000). */
  async list(filter: DynamicScheduleFilter = {}): Promise<DynamicSchedulePage> {
    const limit = filter.limit ?? 100;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE)
      throw schedulingErrors.invalidOption('list limit', `a whole number from 1 to ${MAX_PAGE}`, limit);
    if (filter.enabled !== undefined && typeof filter.enabled !== 'boolean') throw schedulingErrors.invalidOption('list enabled', 'a boolean', filter.enabled);
    for (const field of ['handler', 'tenantId', 'after', 'idPrefix'] as const) {
      const value = filter[field];
      if (value !== undefined && typeof value !== 'string') throw schedulingErrors.invalidOption(`list ${field}`, 'a string', value);
    }
    const rows = await this.store.list({
      handler: filter.handler ?? null,
      tenantId: filter.tenantId ?? null,
      enabled: filter.enabled ?? null,
      after: filter.after ?? null,
      idPrefix: filter.idPrefix ?? null,
      limit: limit + 1,
    });
    const schedules = rows.slice(0, limit).map(viewOfSchedule);
    return rows.length > limit ? { schedules, nextCursor: schedules[schedules.length - 1].id } : { schedules };
  }

  /** Runs the schedule's handler once, now, on this instance (scheduledAt: the instant asked). */
  runNow(id: string): Promise<JobRunRecord[]> {
    return this.engine.runNow(checkScheduleId(id));
  }

  /** Reads the other instances' changes now instead of at the next poll. */
  refresh(): Promise<void> {
    return this.sync.poll();
  }

  /** The handler names of this application. */
  get handlerNames(): string[] {
    return [...this.handlers.keys()];
  }

  /** Recent outcomes on this instance, oldest first. */
  get runs(): readonly JobRunRecord[] {
    return this.engine.runs;
  }

  onRun(listener: JobRunListener): () => void {
    return this.engine.onRun(listener);
  }

  /** Resolves once every run this instance started has settled. */
  idle(): Promise<void> {
    return this.engine.idle();
  }

  /** Per handler, the schedule with the longest gap: its rows are kept at least two of its gaps. */
  private retainedHandlers(): RetainedJob[] {
    const longest = new Map<string, { job: RetainedJob; gap: number }>();
    const now = Date.now();
    for (const declaration of this.engine.declarations) {
      const gap = longestGapMs(declaration, now);
      const current = longest.get(declaration.name);
      if (!current || gap > current.gap) longest.set(declaration.name, { job: declaration, gap });
    }
    return [...longest.values()].map(({ job }) => job);
  }
}
