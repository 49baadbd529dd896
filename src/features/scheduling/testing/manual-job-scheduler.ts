import { JobScheduleEngine } from '../job-schedule-engine';
import type { JobHandler } from '../occurrence/occurrence-runner';
import { checkJobDeclaration } from '../schedule/job-declaration';
import type { SchedulerLogger } from '../scheduler-ports';
import type { JobRunListener, JobRunRecord, ScheduledJobOptions, TenantDirectory } from '../scheduling.types';
import { FixedClock } from './fixed-clock';
import { InMemoryJobLease } from './in-memory-job-lease';
import { ManualTimers } from './manual-timers';

export interface ManualJobSchedulerOptions {
  clock?: FixedClock;
  /** Share one lease between schedulers to play several instances. */
  lease?: InMemoryJobLease;
  tenants?: TenantDirectory;
  lateToleranceMs?: number;
  logger?: SchedulerLogger;
  random?: () => number;
  failureLogIntervalMs?: number;
  /** How often it looks for occurrences whose holder stopped heartbeating (default 30 s). */
  takeOverScanMs?: number;
}

const silent: SchedulerLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * A scheduler for specs about time: a fixed clock that moves only with advance(), timers that
 * fire in order at their instants, an in-memory lease. Two of them sharing a clock and a lease
 * are two instances.
 */
export class ManualJobScheduler {
  readonly clock: FixedClock;
  readonly lease: InMemoryJobLease;
  private readonly timers: ManualTimers;
  private readonly engine: JobScheduleEngine;

  constructor(options: ManualJobSchedulerOptions = {}) {
    this.clock = options.clock ?? options.lease?.clock ?? new FixedClock();
    this.lease = options.lease ?? new InMemoryJobLease(this.clock);
    // The engine's periodic work is the take-over scan: with no RUNNING run in the lease (shared
    // by the instances played), it finds nothing, so its idle periods are skipped, not fired.
    this.timers = new ManualTimers(this.clock, { periodicWorkIdle: () => !this.lease.hasRunningRuns() });
    this.engine = new JobScheduleEngine({
      timers: this.timers,
      lease: this.lease,
      history: this.lease,
      tenants: options.tenants,
      logger: options.logger ?? silent,
      lateToleranceMs: options.lateToleranceMs,
      random: options.random,
      failureLogIntervalMs: options.failureLogIntervalMs,
      abandoned: this.lease,
      takeOverScanMs: options.takeOverScanMs,
    });
  }

  /** Declares a job, validated like @Scheduled. */
  register(job: { name: string; run: JobHandler; enabled?: boolean } & ScheduledJobOptions): void {
    const { name, run, enabled, ...options } = job;
    this.engine.register({ declaration: checkJobDeclaration(name, options), handler: run, enabled: enabled ?? true });
  }

  start(): Promise<void> {
    return this.engine.start();
  }

  stop(): Promise<void> {
    return this.engine.stop();
  }

  /** Moves the clock forward, firing each due instant in order and letting runs settle. */
  advance(ms: number): Promise<void> {
    return this.timers.advance(ms);
  }

  runNow(name: string): Promise<JobRunRecord[]> {
    return this.engine.runNow(name);
  }

  onRun(listener: JobRunListener): () => void {
    return this.engine.onRun(listener);
  }

  /** Every outcome recorded by this instance, oldest first. */
  get runs(): readonly JobRunRecord[] {
    return this.engine.runs;
  }

  /** Instants at which timers wait. */
  get pendingTimers(): number[] {
    return this.timers.pending;
  }
}
