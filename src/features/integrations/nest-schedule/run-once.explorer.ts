import { type BeforeApplicationShutdown, Inject, Injectable, type OnApplicationBootstrap, type OnModuleInit, Optional } from '@nestjs/common';
import { LibraryLogger } from '../../job-scheduler/log-text';
import { differingKeysAmong } from '../../job-scheduler/module-registrations';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { JobSchedulerService } from '../../job-scheduler/job-scheduler.service';
import { AbandonedOccurrenceScan, DEFAULT_TAKE_OVER_SCAN_MS, type TakeOverPolicy } from '../../scheduling/occurrence/abandoned-occurrences';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_SCHEDULED_LEASE_MS } from '../../scheduling/schedule/job-declaration';
import { type RetainedJob, resolveScheduledRetention, retentionPasses } from '../../scheduling/retention/scheduled-retention';
import { ScheduledRetentionTimer } from '../../scheduling/retention/scheduled-retention.timer';
import { systemTimers } from '../../scheduling/scheduler-ports';
import { scheduledJobOf } from '../../scheduling/scheduled.decorator';
import { cronTicks, dependsOnTimeZone } from './cron-ticks';
import type { TickSchedule } from './tick-occurrence';
import { nestScheduleOf } from './nest-schedule.metadata';
import { bindRunOnce } from './run-once.bindings';
import { type RunOnceMetadata, runOnceOf } from './run-once.decorator';
import { runOnceErrors } from './run-once.errors';
import { RUN_ONCE_MODULE_OPTIONS } from './run-once.module-definition';
import { defaultRunOnceName, isJobName } from './run-once.naming';
import { type RunOncePlan, RunOnceRunner } from './run-once.runner';
import type { RunOnceErrorPolicy, RunOnceModuleOptions } from './run-once.types';

/**
 * Whether a provider is @nestjs/schedule's explorer, which ScheduleModule.forRoot() (or
 * forRootAsync) registers and which starts the @Cron methods at bootstrap. Known by its name and
 * its module's: this package loads without @nestjs/schedule installed, and an application may
 * hold another copy of it than the one this package would resolve.
 */
const isScheduleExplorer = (wrapper: InstanceWrapper): boolean =>
  wrapper.metatype?.name === 'ScheduleExplorer' && wrapper.host?.metatype?.name === 'ScheduleModule';

/** A bound @RunOnce method, for the take-over of its abandoned ticks. */
interface RunOnceBinding extends TakeOverPolicy {
  plan: RunOncePlan;
  instance: object;
  original: RunOnceMetadata['original'];
}

const checkScanMs = (value: unknown): number => {
  if (value === undefined) return DEFAULT_TAKE_OVER_SCAN_MS;
  if (!Number.isSafeInteger(value) || (value as number) < 1)
    throw runOnceErrors.invalidModuleOption('takeOverScanMs', 'a whole number of ms, 1 or more', value);
  return value as number;
};

const checkErrorPolicy = (value: unknown): RunOnceErrorPolicy => {
  if (value === undefined) return 'rethrow';
  if (value !== 'rethrow' && value !== 'log') throw runOnceErrors.invalidModuleOption('errors', "'rethrow' or 'log'", value);
  return value;
};

/**
 * Finds the @RunOnce methods of every provider and controller at module init, checks each against
 * the @Cron beside it (at boot: not a @Cron, an @Interval or @Timeout, an unreadable cron, a name
 * used twice all refuse to start) and binds each instance to the lease.
 *
 * Why binding, and not wrapping here: @nestjs/schedule's explorer takes `instance[method]` in its
 * own onModuleInit, and ScheduleModule is global, so its hooks run before those of every
 * non-global module and, among global ones, in import order. No module can count on running
 * first; so @RunOnce puts the wrapper in place when the class is declared, and this explorer only
 * tells each instance's wrapper which lease to use. Crons start at application bootstrap, after
 * every module's init: no tick can come before its binding.
 */
/** The lease code of the periods in which @RunOnce ticks' rows are pruned. */
export const RUN_ONCE_RETENTION_CODE = 'run-once.retention';

/** How long shutdown waits for @RunOnce ticks in flight: the lease service's default shutdown grace, and a margin. */
const RUN_ONCE_SHUTDOWN_WAIT_MS = 15_000;

/** A tick is judged against its due instant with this tolerance, as the scheduler's default. */
const RETENTION_TOLERANCE_MS = 60_000;

@Injectable()
export class RunOnceExplorer implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new LibraryLogger('RunOnce');
  /** The options of the RunOnceModule registration this explorer belongs to (compared when there are two). */
  readonly moduleOptions: RunOnceModuleOptions;
  private readonly errors: RunOnceErrorPolicy;
  private readonly retention: ReturnType<typeof resolveScheduledRetention>;
  private readonly retained: RetainedJob[] = [];
  private retentionTimer?: ScheduledRetentionTimer;
  private readonly bindings: RunOnceBinding[] = [];
  private readonly takeOverScanMs: number;
  private takeOvers?: AbandonedOccurrenceScan<RunOnceBinding>;
  /** One runner for every tick and take-over of this application: shutdown waits for all of them. */
  private runner?: RunOnceRunner;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    @Optional() private readonly jobs?: JobSchedulerService,
    @Optional() @Inject(RUN_ONCE_MODULE_OPTIONS) options: RunOnceModuleOptions = {},
  ) {
    this.moduleOptions = options ?? {};
    this.errors = checkErrorPolicy((options ?? {}).errors);
    this.retention = resolveScheduledRetention((options ?? {}).retention, RETENTION_TOLERANCE_MS);
    this.takeOverScanMs = checkScanMs((options ?? {}).takeOverScanMs);
  }

  /** Starts pruning the ticks' rows (when there are @RunOnce methods and retention is on). */
  onApplicationBootstrap(): void {
    this.startTakeOvers();
    if (!this.jobs || !this.retention || this.retained.length === 0) return;
    const retention = this.retention;
    const passes = () => retentionPasses(this.retained, retention, RETENTION_TOLERANCE_MS, systemTimers.now());
    this.retentionTimer = new ScheduledRetentionTimer(this.jobs, systemTimers, retention, passes, this.logger, RUN_ONCE_RETENTION_CODE);
    this.retentionTimer.start();
  }

  /** Stops the scans, then waits for the ticks in flight (see RunOnceRunner.close) before the DataSource closes. */
  async beforeApplicationShutdown(): Promise<void> {
    this.retentionTimer?.stop();
    await this.takeOvers?.stop();
    await this.runner?.close(RUN_ONCE_SHUTDOWN_WAIT_MS);
  }

  /**
   * Ticks whose holder stopped heartbeating (its process died) are claimed in batches every period
   * for every @RunOnce method, and run again here (the method, with trigger 'take-over', under the
   * claimed lease), up to maxAttempts owners; `abandoned: 'drop'` ends them unrun. As for declared jobs.
   */
  private startTakeOvers(): void {
    const jobs = this.jobs;
    if (!jobs || this.bindings.length === 0) return;
    const runner = (this.runner ??= new RunOnceRunner(jobs));
    const unique = [...new Map(this.bindings.map((binding) => [binding.name, binding])).values()];
    this.takeOvers = new AbandonedOccurrenceScan<RunOnceBinding>(
      jobs,
      {
        enabledJobs: () => unique,
        takeOver: (binding, occurrence) => {
          void runner.takeOver(binding.plan, binding.instance, binding.original, occurrence.scheduledAt, occurrence.claim.lock);
          return true;
        },
        record: (record) =>
          this.logger.warn(`${record.name} ${record.scheduledAt.toISOString()}: ${record.error instanceof Error ? record.error.message : record.outcome}`),
      },
      systemTimers,
      this.logger,
      this.takeOverScanMs,
      RETENTION_TOLERANCE_MS,
    );
    this.takeOvers.start();
  }

  /** The @RunOnce methods found (one per lease code), with their tick schedules: what the dashboard lists. */
  get methods(): ReadonlyArray<{ name: string; method: string; schedule: TickSchedule }> {
    const unique = new Map(this.bindings.map((binding) => [binding.name, binding]));
    return [...unique.values()].map((binding) => ({ name: binding.name, method: binding.plan.method, schedule: binding.plan.ticks }));
  }

  /** Prunes the ticks' finished rows now (once per period across instances); null when another instance has it or retention is off. */
  pruneTicks(): Promise<number | null> {
    return this.retentionTimer ? this.retentionTimer.runOnce() : Promise.resolve(null);
  }

  onModuleInit(): void {
    const wrappers: InstanceWrapper[] = [...this.discovery.getControllers(), ...this.discovery.getProviders()];
    const explorers = [...new Set(wrappers.map((wrapper): unknown => wrapper.instance))].filter((instance) => instance instanceof RunOnceExplorer);
    if (explorers.length > 1) throw runOnceErrors.duplicateModule(explorers.length, differingKeysAmong(explorers.map((explorer) => explorer.moduleOptions)));
    const scheduledNames = new Set<string>();
    for (const wrapper of wrappers) {
      const declaration = scheduledJobOf(wrapper.metatype);
      if (declaration) scheduledNames.add(declaration.name);
    }
    const methodsByName = new Map<string, { method: string; owner: unknown }>();
    const seen = new Set<object>();
    let count = 0;
    for (const wrapper of wrappers) {
      const instance = wrapper.instance as object | undefined;
      if (!instance || typeof instance !== 'object' || seen.has(instance) || !Object.getPrototypeOf(instance)) continue;
      seen.add(instance);
      // Like @nestjs/schedule: a request-scoped provider has no cron (it warns about it).
      if (!wrapper.isDependencyTreeStatic()) continue;
      for (const key of this.scanner.getAllMethodNames(Object.getPrototypeOf(instance) as object | null)) {
        const found = this.plan(instance, key, scheduledNames, methodsByName);
        if (!found) continue;
        if (!this.jobs) throw runOnceErrors.noLease();
        const bound = (this.runner ??= new RunOnceRunner(this.jobs));
        const { plan, original } = found;
        bindRunOnce(instance, key, (args) => bound.run(plan, instance, original, args));
        // No catch-up for @nestjs/schedule ticks: one found late is ended, not run.
        this.bindings.push({
          name: plan.code,
          abandoned: plan.abandoned,
          maxAttempts: plan.maxAttempts,
          missed: 'drop',
          ...(plan.leaseMs === undefined ? {} : { leaseMs: plan.leaseMs }),
          ...(plan.heartbeatMs === undefined ? {} : { heartbeatMs: plan.heartbeatMs }),
          plan,
          instance,
          original,
        });
        if (!this.retained.some((job) => job.name === plan.code)) this.retained.push({ name: plan.code, schedule: plan.ticks });
        count++;
      }
    }
    if (count > 0 && !wrappers.some(isScheduleExplorer)) throw runOnceErrors.noScheduleModule(count);
    if (count > 0) this.logger.log(`${count} @RunOnce method(s) take a lease per tick`);
  }

  /** The checked plan of one method and the method as written, or undefined if it has no @RunOnce. Throws RunOnceError. */
  private plan(
    instance: object,
    key: string,
    scheduledNames: Set<string>,
    methodsByName: Map<string, { method: string; owner: unknown }>,
  ): { plan: RunOncePlan; original: RunOnceMetadata['original'] } | undefined {
    const methodRef = (instance as Record<string, unknown>)[key];
    const runOnce = runOnceOf(methodRef);
    if (!runOnce) return undefined;
    const className = instance.constructor.name;
    const method = `${className}.${key}`;
    const schedule = nestScheduleOf(methodRef);
    if (!schedule) throw runOnceErrors.notACron(method);
    if (schedule.type === 'interval') throw runOnceErrors.notAligned(method, '@Interval');
    if (schedule.type === 'timeout') throw runOnceErrors.notAligned(method, '@Timeout');

    const { declaration, original } = runOnce;
    const code = declaration.name ?? defaultRunOnceName(className, key);
    if (!isJobName(code)) throw runOnceErrors.noDefaultName(method, code);
    // Two instances of one class share their method's name (one lease per tick for both); two methods may not.
    const owner = instance.constructor;
    const previous = methodsByName.get(code);
    if (previous && (previous.owner !== owner || previous.method !== method)) throw runOnceErrors.duplicateName(code, previous.method, method);
    if (scheduledNames.has(code)) throw runOnceErrors.nameOfScheduledJob(code, method);
    methodsByName.set(code, { method, owner });

    const ticks = cronTicks(method, schedule);
    const zoned = (schedule.timeZone ?? null) !== null || (schedule.utcOffset ?? null) !== null;
    if (!zoned && dependsOnTimeZone(method, schedule.cronTime, Date.now())) {
      this.logger.warn(
        `${method}: @Cron('${String(schedule.cronTime)}') has no timeZone, so its ticks follow this process's time zone (${ticks.description}); instances in another zone would run other instants. Give @Cron a timeZone.`,
      );
    }
    return {
      plan: {
        code,
        method,
        ticks,
        leaseMs: declaration.leaseMs ?? DEFAULT_SCHEDULED_LEASE_MS,
        heartbeatMs: declaration.heartbeatMs,
        errors: declaration.errors ?? this.errors,
        abandoned: declaration.abandoned ?? 'take-over',
        maxAttempts: declaration.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      },
      original,
    };
  }
}
