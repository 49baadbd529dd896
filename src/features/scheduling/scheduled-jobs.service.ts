import { type BeforeApplicationShutdown, Inject, Injectable, type OnApplicationBootstrap, type OnModuleInit, Optional } from '@nestjs/common';
import { LibraryLogger } from '../job-scheduler/log-text';
import { ModuleRef } from '@nestjs/core';
import { JobSchedulerStatus } from '../job-scheduler/job-scheduler.entity';
import { JobSchedulerService } from '../job-scheduler/job-scheduler.service';
import { JOB_SCHEDULER_DATA_SOURCE } from '../job-scheduler/job-scheduler.constants';
import { JOB_SCHEDULER_MODULE_OPTIONS } from '../job-scheduler/job-scheduler.module-definition';
import { differingKeysAmong } from '../job-scheduler/module-registrations';
import type { JobSchedulerRuntimeOptions } from '../job-scheduler/job-scheduler.options';
import type { JobSchedulerDatabase } from '../job-scheduler/lease-database';
import { DEFAULT_PAUSE_POLL_MS, type JobPause, JobPausePoller, JobPauseStore } from './pauses/job-pauses';
import type { JobDeclaration } from './schedule/job-declaration';
import { JobScheduleEngine } from './job-schedule-engine';
import { dueInstantOf, keysUntil } from './occurrence/occurrence-keys';
import { createPrometheusJobMetrics } from './records/prometheus-job-metrics';
import { ScheduledJobsExplorer } from './scheduled-jobs.explorer';
import { type ResolvedScheduledRetention, resolveScheduledRetention, retentionPasses } from './retention/scheduled-retention';
import { ScheduledRetentionTimer } from './retention/scheduled-retention.timer';
import { canFindAbandoned, type SchedulerHistory, systemTimers } from './scheduler-ports';
import { SCHEDULING_MODULE_OPTIONS, type SchedulingModuleOptions, TENANT_DIRECTORY } from './scheduling.module-definition';
import { schedulingErrors } from './scheduling.errors';
import type { JobRunListener, JobRunRecord, TenantDirectory } from './scheduling.types';

/** Declared jobs' claims go out this long before their instant, on the PostgreSQL lease (SchedulingModule option claimAheadMs). */
export const DEFAULT_CLAIM_AHEAD_MS = 2_000;

export interface ScheduledJobHealth {
  name: string;
  /** The due instant of the latest successful occurrence (any instance), or null. */
  lastSuccessAt: Date | null;
  /** Occurrences due since then (counted up to 3). */
  occurrencesSinceSuccess: number;
  /** Two or more occurrences passed without a success. */
  stale: boolean;
}

/** The due instant each occurrence runKey names (runKeys that name none are left out). */
const dueInstants = (runKeys: ReadonlyMap<string, string>): Map<string, number> => {
  const instants = new Map<string, number>();
  for (const [name, runKey] of runKeys) {
    const due = dueInstantOf(runKey);
    if (due !== null) instants.set(name, due);
  }
  return instants;
};

/** The latest occurrences of jobs, from the lease table (any instance's): one statement for all. */
const postgresHistory = (jobs: JobSchedulerService): SchedulerHistory => ({
  latestOccurrence: async (name, until) => {
    const runKey = await jobs.latestScheduledRunKey(name, undefined, keysUntil(until));
    return runKey === null ? null : dueInstantOf(runKey);
  },
  latestOccurrences: async (names, until) => dueInstants(await jobs.latestScheduledRunKeys(names, undefined, keysUntil(until))),
  recordedOccurrences: async (name, from, until) => {
    const runKeys = await jobs.scheduledRunKeysBetween(name, new Date(from).toISOString(), new Date(until).toISOString());
    return runKeys.map(dueInstantOf).filter((instant): instant is number => instant !== null);
  },
});

/**
 * The declared jobs of this application: discovered at init, started on bootstrap (unless
 * `start: false`), stopped before shutdown. runNow runs one on demand.
 */
@Injectable()
export class ScheduledJobsService implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new LibraryLogger('ScheduledJobs');
  private readonly engine: JobScheduleEngine;
  /** On the PostgreSQL lease only (a test lease has nothing to prune). */
  private readonly retention?: ScheduledRetentionTimer;
  /** Runtime pauses (PostgreSQL lease only): the table, its poller, and each job's configured `enabled`. */
  private pauses?: { store: JobPauseStore; poller: JobPausePoller };
  private readonly configuredEnabled = new Map<string, boolean>();

  constructor(
    @Inject(SCHEDULING_MODULE_OPTIONS) private readonly options: SchedulingModuleOptions,
    private readonly explorer: ScheduledJobsExplorer,
    private readonly moduleRef: ModuleRef,
    @Optional() private readonly jobs?: JobSchedulerService,
  ) {
    const lease = options.lease ?? jobs;
    if (!lease) throw schedulingErrors.noLease();
    const metrics =
      options.metrics === false ? undefined : createPrometheusJobMetrics(typeof options.metrics === 'object' ? options.metrics.registry : undefined);
    this.engine = new JobScheduleEngine({
      timers: options.timers ?? systemTimers,
      lease,
      history: options.lease ? options.history : jobs && postgresHistory(jobs),
      tenants: { listTenants: () => this.tenantDirectory().listTenants() },
      metrics,
      logger: this.logger,
      lateToleranceMs: options.lateToleranceMs,
      shutdownGraceMs: options.shutdownGraceMs,
      failureLogIntervalMs: options.failureLogIntervalMs,
      // Take-over of occurrences whose holder vanished: on the PostgreSQL lease.
      abandoned: options.lease ? (canFindAbandoned(options.lease) ? options.lease : undefined) : jobs,
      takeOverScanMs: options.takeOverScanMs,
      claimAheadMs: options.claimAheadMs ?? (options.lease ? 0 : DEFAULT_CLAIM_AHEAD_MS),
      claimAheadScales: options.claimAheadMs === undefined,
    });
    const lateToleranceMs = options.lateToleranceMs ?? 60_000;
    const retention = resolveScheduledRetention(options.retention, lateToleranceMs);
    if (retention && jobs && !options.lease) this.retention = this.retentionTimer(jobs, retention, lateToleranceMs);
  }

  async onModuleInit(): Promise<void> {
    const schedulers = this.explorer.countInstances(ScheduledJobsService);
    if (schedulers > 1) {
      const options = this.moduleRef.get<SchedulingModuleOptions>(SCHEDULING_MODULE_OPTIONS, { strict: false, each: true });
      throw schedulingErrors.duplicateModule('SchedulingModule', schedulers, differingKeysAmong(options));
    }
    const jobs = this.explorer.explore(this.options.settings);
    const perTenant = jobs.find((job) => job.declaration.tenancy === 'per-tenant');
    if (perTenant && !this.findTenantDirectory()) throw schedulingErrors.noTenants(perTenant.declaration.name);
    for (const job of jobs) {
      this.engine.register(job);
      this.configuredEnabled.set(job.declaration.name, job.enabled);
    }
    this.pauses = this.pauseTable();
    // Before any timer is armed (bootstrap): a missing pause table fails the boot, named, once.
    await this.pauses?.store.checkSchema(this.logger);
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.options.start === false) return;
    // Paused jobs are disarmed before any timer is armed.
    await this.pauses?.poller.start();
    await this.engine.start();
    this.retention?.start();
    this.logger.log(`Started ${this.engine.jobNames.length} scheduled job(s)`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.retention?.stop();
    await this.pauses?.poller.stop();
    await this.engine.stop();
  }

  /**
   * Prunes the declared jobs' finished occurrences now, as the hourly retention does (once per
   * period across instances): the rows deleted, or null when another instance has this period.
   * Null too with retention switched off or on a test lease.
   */
  async pruneOccurrences(): Promise<number | null> {
    return this.retention ? this.retention.runOnce() : null;
  }

  /** Runs a declared job once, now; scheduledAt is the instant it was asked. UNKNOWN_JOB otherwise. */
  runNow(name: string): Promise<JobRunRecord[]> {
    return this.engine.runNow(name);
  }

  /**
   * Pauses a declared job on every instance (persisted; each instance sees it within its poll
   * period, this one at once) until resumeJob; a run in progress finishes. false: already paused.
   */
  async pauseJob(name: string, pausedBy: string): Promise<boolean> {
    const store = this.pauseStoreFor(name);
    const paused = await store.pause(name, pausedBy);
    await this.pauses?.poller.pollNow();
    return paused;
  }

  /** Resumes a paused job: its timers fire again from the next due instant. false: it was not paused. */
  async resumeJob(name: string): Promise<boolean> {
    const store = this.pauseStoreFor(name);
    const resumed = await store.resume(name);
    await this.pauses?.poller.pollNow();
    return resumed;
  }

  /** The paused jobs, as the pause table holds them now (empty without it). */
  async pausedJobs(): Promise<JobPause[]> {
    return this.pauses ? this.pauses.store.list() : [];
  }

  /** Every declared job's checked declaration (enabled or not). */
  get declarations(): JobDeclaration[] {
    return this.engine.declarations;
  }

  /** Whether a declared job's timers run on this instance (false when disabled by its settings or paused). */
  isEnabled(name: string): boolean {
    return this.engine.isEnabled(name);
  }

  private pauseStoreFor(name: string): JobPauseStore {
    if (!this.engine.jobNames.includes(name)) throw schedulingErrors.unknownJob(name);
    if (!this.pauses) throw schedulingErrors.pausesUnavailable(name);
    return this.pauses.store;
  }

  /** On the PostgreSQL lease, unless `pauses: false`: the pause table next to the lease table, and its poller. */
  private pauseTable(): { store: JobPauseStore; poller: JobPausePoller } | undefined {
    if (!this.jobs || this.options.lease || this.options.pauses === false) return undefined;
    const pollMs = this.options.pauses?.pollMs ?? DEFAULT_PAUSE_POLL_MS;
    if (!Number.isSafeInteger(pollMs) || pollMs < 10) throw schedulingErrors.invalidOption('pauses.pollMs', 'a whole number of ms, 10 or more', pollMs);
    const source = this.findProvider<JobSchedulerDatabase>(JOB_SCHEDULER_DATA_SOURCE);
    if (!source) return undefined;
    const leaseOptions = this.findProvider<JobSchedulerRuntimeOptions>(JOB_SCHEDULER_MODULE_OPTIONS);
    const store = new JobPauseStore(source, { preparedStatements: leaseOptions?.preparedStatements, statementTimeoutMs: leaseOptions?.statementTimeoutMs });
    const apply = (paused: ReadonlyMap<string, JobPause>) => {
      for (const [name, enabled] of this.configuredEnabled) this.engine.setEnabled(name, enabled && !paused.has(name));
    };
    return { store, poller: new JobPausePoller(store, apply, this.logger, pollMs) };
  }

  private findProvider<T>(token: string | symbol): T | undefined {
    try {
      return this.moduleRef.get<T>(token, { strict: false });
    } catch {
      return undefined;
    }
  }

  /** The names of the declared jobs. */
  get jobNames(): string[] {
    return this.engine.jobNames;
  }

  /** Recent outcomes on this instance, oldest first. */
  get runs(): readonly JobRunRecord[] {
    return this.engine.runs;
  }

  /** Calls `listener` with every outcome on this instance; returns the unsubscribe function. */
  onRun(listener: JobRunListener): () => void {
    return this.engine.onRun(listener);
  }

  private findTenantDirectory(): TenantDirectory | undefined {
    if (this.options.tenants) return this.options.tenants;
    try {
      return this.moduleRef.get<TenantDirectory>(TENANT_DIRECTORY, { strict: false });
    } catch {
      return undefined;
    }
  }

  private tenantDirectory(): TenantDirectory {
    const directory = this.findTenantDirectory();
    if (!directory) throw schedulingErrors.noTenants('(per-tenant job)');
    return directory;
  }

  /**
   * Each enabled job with the age of its last success against its schedule: `stale` when two or
   * more occurrences have been due since the last success recorded by any instance (or since
   * this instance started) — the "no success for two intervals" alert.
   */
  async jobHealth(): Promise<ScheduledJobHealth[]> {
    const lastSuccesses = async (names: readonly string[]): Promise<ReadonlyMap<string, number>> =>
      this.jobs ? dueInstants(await this.jobs.latestScheduledRunKeys(names, JobSchedulerStatus.SUCCESS)) : new Map();
    const health = await this.engine.dueSinceLastSuccess(lastSuccesses);
    return health.map(({ name, lastSuccessAt, dueSince }) => ({
      name,
      lastSuccessAt: lastSuccessAt === null ? null : new Date(lastSuccessAt),
      occurrencesSinceSuccess: dueSince,
      stale: dueSince >= 2,
    }));
  }

  private retentionTimer(jobs: JobSchedulerService, retention: ResolvedScheduledRetention, lateToleranceMs: number): ScheduledRetentionTimer {
    const timers = this.options.timers ?? systemTimers;
    const passes = () => retentionPasses(this.engine.declarations, retention, lateToleranceMs, timers.now());
    return new ScheduledRetentionTimer(jobs, timers, retention, passes, this.logger);
  }

  /** Resolves once every run this instance started has settled (for tests and graceful scripts). */
  idle(): Promise<void> {
    return this.engine.idle();
  }
}
