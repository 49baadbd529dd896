// Longer than ~350 lines on purpose: the lease's public API, one documented method per single-statement operation (the run machinery is in run/lease-runs.ts).
import { randomUuid } from './random-uuid';
import { type BeforeApplicationShutdown, Inject, Injectable, type OnApplicationBootstrap, type OnModuleInit, Optional } from '@nestjs/common';
import { LibraryLogger } from './log-text';
import { describeDifference, differingKeysAmong } from './module-registrations';
import { leaseSchema } from './schema/lease-schema';
import { checkSchemaAtBoot } from './schema/schema-check';
import { ModuleRef } from '@nestjs/core';
import { JOB_SCHEDULER_DATA_SOURCE, RELEASED_DATA } from './job-scheduler.constants';
import type { JobSchedulerStatus } from './job-scheduler.entity';
import { JobSchedulerExecutor } from './job-scheduler.executor';
import { JobLeaseDatabaseError, moduleErrors, replicationErrors } from './job-scheduler.errors';
import { JOB_SCHEDULER_MODULE_OPTIONS } from './job-scheduler.module-definition';
import { checkBoolean, checkGraceMs, checkNodeId, checkStatementTimeoutMs, type JobSchedulerRuntimeOptions } from './job-scheduler.options';
import type { AcquireRow, SqlStatement } from './job-scheduler.sql';
import type { TakeOverRow } from './lease-take-over.sql';
import type { JobSchedulerStatements } from './job-scheduler.statements';
import type { ReplicationRow } from './operations/operations.sql';
import type {
  JobAcquireManyOptions,
  JobAcquireManyRun,
  JobAcquireOptions,
  JobAcquireResult,
  JobAcquiredLease,
  JobBatchAcquireOptions,
  JobExecutionLease,
  JobFinalizeOptions,
  JobLease,
  JobLeaseHold,
  JobLeaseWithData,
  JobRunAcquiredOptions,
  RunExclusiveResult,
} from './job-scheduler.types';
import { resolvePruneOptions } from './operations/job-run-arguments';
import type { JobPruneOptions } from './operations/job-run.types';
import { pruneRestMs, restFor } from './operations/prune-pacing';
import {
  acquireBatch,
  acquiredResult,
  acquireGrouped,
  acquireUnheard,
  acquireOutcome,
  type BatchAcquireContext,
  isSerializationFailure,
  NOT_ACQUIRED,
  resolveBatchAcquireRequests,
  resolveManyAcquireRequests,
} from './lease-batch-acquire';
import { ownValue } from './job-identity';
import {
  checkClaimAgain,
  checkClaimAnnounce,
  checkFinalizeAgain,
  checkJobLease,
  checkStatementTimeout,
  resolveAcquireRequest,
  serializeJobData,
} from './lease-arguments';
import { monotonicNow } from './run/lease-deadline';
import type { JobSchedulerDatabase } from './lease-database';
import { ClaimAnnouncements } from './claim-announcements';
import type { HoldStatements } from './run/lease-hold';
import { LeaseRuns } from './run/lease-runs';
import { type TakeOverBatch, type TakeOverKey, takeOverBatchOf, takeOverParameters } from './lease-take-over';
import { createLeaseTelemetry, type LeaseOperation, type LeaseTelemetry } from './telemetry/lease-telemetry';
import { type ResolvedTimingDefaults, resolveTimingDefaults } from './lease-timing';
import { assessReplication, type JobLeaseReplicationStatus } from './operations/replication-check';

/** How long a replication reading stands before requireSynchronousReplication reads it again. */
const REPLICATION_RECHECK_MS = 30_000;

/**
 * The PostgreSQL lease. Each method is one statement; runExclusive, runAcquired and keepAlive add
 * the heartbeat and the finalization around a callback (run/lease-runs.ts, which this service
 * hands its statements to). Owner tokens are never logged.
 */
/** How job_lease_operations_total names a fenced write's outcome: applied (extended for a heartbeat) or lost. */
const fencedOutcome = (operation: LeaseOperation, applied: boolean): string => (applied ? (operation === 'heartbeat' ? 'extended' : 'applied') : 'lost');

@Injectable()
export class JobSchedulerService implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new LibraryLogger(JobSchedulerService.name);
  private readonly executor: JobSchedulerExecutor;
  private readonly telemetry: LeaseTelemetry;
  private readonly statements: JobSchedulerStatements;
  private readonly timingDefaults: ResolvedTimingDefaults;
  private readonly nodeId: string;
  private readonly requireSynchronousReplication: boolean;
  /** runExclusive, runAcquired, keepAlive and the shutdown of the runs still going. */
  private readonly runs: LeaseRuns;
  /** The last replication reading (monotonic instant) and whether its risk was logged. */
  private replication: { status: JobLeaseReplicationStatus; readAt: number } | undefined;
  private replicationWarned = false;
  /** The runs other instances announced they won (acquireMany `{ announce }`); undefined with announceClaims off. */
  private readonly announcements: ClaimAnnouncements | undefined;

  constructor(
    /** A DataSource (what the module injects), a 1.x-style Repository<JobScheduler>, or { pool }. */
    @Inject(JOB_SCHEDULER_DATA_SOURCE) dataSource: JobSchedulerDatabase,
    @Optional() @Inject(JOB_SCHEDULER_MODULE_OPTIONS) options: JobSchedulerRuntimeOptions = {},
    /** Under Nest: to find a second instance (the module imported twice). */
    @Optional() private readonly moduleRef?: ModuleRef,
  ) {
    this.timingDefaults = resolveTimingDefaults(options.defaults);
    this.nodeId = checkNodeId(options.nodeId);
    const shutdownGraceMs = checkGraceMs(options.shutdownGraceMs);
    this.requireSynchronousReplication = checkBoolean('requireSynchronousReplication', options.requireSynchronousReplication);
    this.executor = new JobSchedulerExecutor(dataSource, {
      preparedStatements: options.preparedStatements,
      statementTimeoutMs: checkStatementTimeoutMs(options.statementTimeoutMs),
      onPreparedStatementsOff: (reason) =>
        this.logger.warn(`Sending unnamed statements from now on: ${reason} (a pooler in transaction mode?). Set preparedStatements: false to say so.`),
      onExpiryTableUnavailable: (reason) =>
        this.logger.warn(
          `Finding expired leases in the job-scheduler table itself from now on: ${reason} (run the migration TrackJobSchedulerLeaseExpiries1764547200010, or grant SELECT on "job-scheduler_lease_expiry"; then restart).`,
        ),
      onFunctionUnavailable: (reason) =>
        this.logger.warn(
          `Sending the acquire statement itself from now on: ${reason} (run the migration AddJobSchedulerAcquireFunction1764547200005, or grant EXECUTE on it; then restart).`,
        ),
    });
    this.telemetry = createLeaseTelemetry(options.telemetry);
    this.statements = this.executor.statements;
    if (checkBoolean('announceClaims', options.announceClaims, options.preparedStatements !== false)) {
      const executor = this.executor;
      this.announcements = new ClaimAnnouncements(() => executor.currentPool, executor.tableNamed(executor.leaseTableName), this.logger);
    }
    this.runs = new LeaseRuns(
      {
        acquire: (acquireOptions) => this.acquire(acquireOptions),
        release: (lease, data) => this.release(lease, data),
        holdStatements: (lease) => this.holdStatements(lease),
        statementTimeoutMs: this.executor.statementTimeoutMs,
        lost: () => this.telemetry.lost(),
      },
      { shutdownGraceMs, logger: this.logger },
    );
  }

  /** The owner identity this node writes on the rows it acquires. */
  get ownerId(): string {
    return this.nodeId;
  }

  /**
   * Takes the run `{ type, code, runKey }`: a fresh insert, or a reclaim of a FAIL row or of a
   * RUNNING row whose lease expired by the database clock. One statement. Invalid options throw
   * before any SQL; a database error is thrown, never reported as "not acquired".
   */
  async acquire(options: JobAcquireOptions): Promise<JobAcquireResult> {
    const request = resolveAcquireRequest(options, this.timingDefaults);
    const { identity } = request;
    await this.checkReplicationBeforeGranting();
    const ownerToken = randomUuid();
    const statement = this.statements.acquire({
      lockKey: identity.lockKey,
      code: identity.code,
      name: identity.name,
      type: identity.type,
      ownerToken,
      runKey: identity.runKey,
      leaseMs: request.leaseMs,
      ownerId: this.nodeId,
      reclaimFailed: request.reclaimFailed,
    });
    // The lease runs from the row's modifiedAt, stamped by the database no earlier than this send.
    const sentAt = monotonicNow();
    const row = await this.telemetry.observe(
      'acquire',
      { code: identity.code, idempotencyKey: identity.lockKey },
      async (): Promise<AcquireRow | undefined> => {
        try {
          // Bounded by statementTimeoutMs like every statement. An answer that comes after the lease
          // it proves (heldUntil) still acquired the row: runExclusive then gives it back unrun.
          return (await this.execute<AcquireRow>(statement))[0];
        } catch (error) {
          if (isSerializationFailure(error)) return undefined;
          throw error;
        }
      },
      acquireOutcome,
    );
    if (!row || row.id === null) return NOT_ACQUIRED;
    return acquiredResult(request, { ...row, id: row.id }, ownerToken, sentAt);
  }

  /**
   * Claims several runs of one code in one statement (the scheduler's tenants of an occurrence):
   * each run is acquired or not by acquire's rules; the results come in the order of `runKeys`.
   * Invalid options throw before any SQL; a database error is thrown for the whole batch.
   */
  async acquireBatch(options: JobBatchAcquireOptions): Promise<JobAcquireResult[]> {
    const requests = resolveBatchAcquireRequests(options, this.timingDefaults);
    if (requests.length === 0) return [];
    await this.checkReplicationBeforeGranting();
    return acquireBatch(requests, this.batchContext());
  }

  private batchContext(announce = false): BatchAcquireContext {
    return { ownerId: this.nodeId, statements: this.statements, telemetry: this.telemetry, execute: (statement) => this.execute(statement), announce };
  }

  /**
   * Acquires several runs of any codes, each by acquire's rules (insert, else reclaim, else not
   * acquired; losers write nothing), in one statement per kind of run (type and reclaimFailed):
   * the scheduler claims the jobs due at one instant so. At most 1,000 distinct runs; results in
   * order. Validated like acquire before any SQL.
   *
   * A run may name the `ownerToken` it gets if won (a UUID the caller drew), so that a claim can
   * be retried when its answer was lost (a timeout, a dropped connection: the statement may still
   * have committed): with `{ again: true }` and the same tokens, a run that claim won, still
   * RUNNING under its token, is acquired again (same id, fencing token and attempt; its lease
   * renewed from this call) instead of lost to its own row.
   */
  async acquireMany(runs: readonly JobAcquireManyRun[], options?: JobAcquireManyOptions): Promise<JobAcquireResult[]> {
    const requests = resolveManyAcquireRequests(runs, this.timingDefaults);
    const again = checkClaimAgain(options);
    const announcements = checkClaimAnnounce(options) ? this.announcements : undefined;
    if (requests.length === 0) return [];
    await this.checkReplicationBeforeGranting();
    if (!announcements) return acquireGrouped(requests, this.batchContext(), again);
    announcements.start();
    return acquireUnheard(requests, announcements, this.batchContext(true), again);
  }

  /**
   * Keeps a hand-acquired lease alive with runExclusive's own loop: heartbeats (retried with
   * backoff while transient failures last), the local deadline (`heldUntil`, after which the signal
   * aborts with LostJobLeaseError), and complete / fail / release that retry within it. Call one of
   * those, or stop(), when the work ends.
   */
  keepAlive(lock: JobAcquiredLease): JobLeaseHold {
    return this.runs.keepAlive(lock);
  }

  /** Bumps the row's modifiedAt (database clock) if this owner still holds it RUNNING. */
  async heartbeat(lease: JobLease, options?: { timeoutMs?: number }): Promise<boolean> {
    const { id, ownerToken } = checkJobLease(lease);
    return this.applies('heartbeat', id, this.statements.heartbeat(id, ownerToken), this.heartbeatTimeoutMs(options));
  }

  /**
   * heartbeat for many leases in one statement per 1,000, each fenced on its own id and owner
   * token: whether each is still held, in order. `timeoutMs` bounds each statement, as heartbeat's.
   * For a scheduler whose runs, started together, heartbeat together.
   */
  async heartbeatMany(leases: readonly JobLease[], options?: { timeoutMs?: number }): Promise<boolean[]> {
    const timeoutMs = this.heartbeatTimeoutMs(options);
    return this.countedPerLease(
      'heartbeat',
      this.appliedPerChunk(leases, (ids, ownerTokens) => this.statements.heartbeatMany(ids, ownerTokens), timeoutMs),
      leases.length,
    );
  }

  /**
   * Marks the owned run SUCCESS with optional JSON data; false if ownership was lost. With
   * `{ again: true }` (a retry of a complete whose answer was lost) it is also true when this
   * owner already completed the run.
   */
  async complete(lease: JobLease, data?: unknown, options?: JobFinalizeOptions): Promise<boolean> {
    const { id, ownerToken } = checkJobLease(lease);
    const statement = checkFinalizeAgain(options) ? this.statements.completeAgain : this.statements.complete;
    return this.applies('complete', id, statement(id, ownerToken, serializeJobData(data)));
  }

  /** Marks the owned run FAIL (immediately reclaimable) with optional JSON data; false if lost. `{ again }` as complete's. */
  async fail(lease: JobLease, data?: unknown, options?: JobFinalizeOptions): Promise<boolean> {
    const { id, ownerToken } = checkJobLease(lease);
    const statement = checkFinalizeAgain(options) ? this.statements.failAgain : this.statements.fail;
    return this.applies('fail', id, statement(id, ownerToken, serializeJobData(data)));
  }

  /**
   * fail for many leases in one statement per 1,000 (each fenced on its own id and owner token, as
   * fail is): whether each applied, in order. Each row gets `data`, or the lease's own `data` where
   * it carries one. For a scheduler giving back many runs at once. `{ again }` as completeMany's.
   */
  failMany(leases: readonly JobLeaseWithData[], data?: unknown, options?: JobFinalizeOptions): Promise<boolean[]> {
    return this.finalizeMany('FAIL', leases, data, options);
  }

  /**
   * complete for many leases, as failMany (a lease's own `data` in place of `data`): for a
   * scheduler completing the runs that ended together, each with its handler's run time. With
   * `{ again: true }` (a retry of a statement whose answer was lost) a lease also applies where
   * this owner already completed its run, as complete's.
   */
  completeMany(leases: readonly JobLeaseWithData[], data?: unknown, options?: JobFinalizeOptions): Promise<boolean[]> {
    return this.finalizeMany('SUCCESS', leases, data, options);
  }

  /**
   * Gives these owned runs up unfinished, in one statement per 1,000: each row stays RUNNING with
   * its lease run out now (by the database clock), as if its holder had crashed, so that another
   * instance takes the run over (a scheduler's take-over scan, or any acquire: fencing token + 1).
   * The row is marked handed over (data `{ handedOver: true }`): the scheduler's take-over runs it
   * whatever the job's limits on crashed runs (`abandoned`, `maxAttempts`). Whether each applied,
   * in order. For a scheduler shutting down with runs claimed but not started.
   */
  async expireMany(leases: readonly JobLease[]): Promise<boolean[]> {
    const fallbackLeaseMs = this.timingDefaults.leaseMs;
    // Announced released where claims are announced: an instance that heard them won claims them again.
    const announce = this.announcements !== undefined;
    return this.appliedPerChunk(leases, (ids, ownerTokens) => this.statements.expireMany(ids, ownerTokens, fallbackLeaseMs, announce));
  }

  /** fail with `{ released: true }` by default: gives the run back so the next acquire can take it. */
  async release(lease: JobLease, data: unknown = RELEASED_DATA): Promise<boolean> {
    return this.fail(lease, data);
  }

  /**
   * Deletes finished runs (SUCCESS / FAIL) last written longer ago than `olderThan` by the
   * database clock, in bounded batches; returns how many. Never deletes RUNNING rows, nor INITIAL
   * SUCCESS rows unless `dangerouslyDeleteRunOnceSuccess` is set. Keep the horizon longer than any
   * catch-up window: a deleted past occurrence can be acquired, and run, again.
   */
  async prune(options: JobPruneOptions): Promise<number> {
    const { limit, dutyCycle, ...parameters } = resolvePruneOptions(options);
    let deleted = 0;
    for (;;) {
      const batchSize = limit === null ? parameters.batchSize : Math.min(parameters.batchSize, limit - deleted);
      if (batchSize <= 0) return deleted;
      const sentAt = monotonicNow();
      // One row back (the count), not one per deleted run: the batch costs the event loop nothing.
      const [{ deleted: batch }] = await this.execute<{ deleted: number }>(this.statements.prune({ ...parameters, batchSize }));
      deleted += batch;
      if (batch < batchSize || deleted === limit) return deleted;
      // Another batch follows: rest in proportion to this one.
      await restFor(pruneRestMs(monotonicNow() - sentAt, dutyCycle));
    }
  }

  /**
   * The greatest runKey recorded for a SCHEDULE run of `code` (of that status, if given) that
   * begins with an ISO 8601 instant (the scheduler's occurrence keys), or null; with `before`,
   * the greatest that sorts before it ("C" collation). One indexed read.
   */
  async latestScheduledRunKey(code: string, status?: JobSchedulerStatus.SUCCESS, before?: string): Promise<string | null> {
    return (await this.latestScheduledRunKeys([code], status, before)).get(code) ?? null;
  }

  /**
   * `latestScheduledRunKey` for many codes in one statement: code → runKey, for the codes that
   * have one (a scheduler's boot reads the history of all its jobs at once).
   */
  async latestScheduledRunKeys(codes: readonly string[], status?: JobSchedulerStatus.SUCCESS, before?: string): Promise<Map<string, string>> {
    if (codes.length === 0) return new Map();
    const rows = await this.execute<{ code: string; runKey: string }>(this.statements.latestScheduledRunKeys(codes, status, before));
    return new Map(rows.map((row) => [row.code, row.runKey]));
  }

  /**
   * The greatest runKey of each (code, prefix) pair among SCHEDULE runs, for the pairs that have
   * one, in one statement (a dynamic schedule's history: its keys share a prefix ending in a
   * space, followed by an ISO 8601 instant). With `before`, among the keys that sort before the
   * pair's prefix followed by `before` only.
   */
  async latestRunKeysByPrefix(
    ranges: readonly { code: string; prefix: string }[],
    before?: string,
  ): Promise<{ code: string; prefix: string; runKey: string }[]> {
    if (ranges.length === 0) return [];
    return this.execute(
      this.statements.latestRunKeysByPrefix(
        ranges.map((range) => range.code),
        ranges.map((range) => range.prefix),
        before,
      ),
    );
  }

  /**
   * The scheduler's take-over: claims for this node, in one statement, up to `limit` of the
   * occurrences of `keys` that are RUNNING past their lease by the database clock and due by
   * `dueBy` (epoch ms, the scheduler's clock), one per key, skipping rows another node is claiming
   * (each claim is a reclaim: owner token drawn by the database, fencing token + 1, attempts + 1),
   * and reports those the scheduler must end unrun instead, and the keys no key here names.
   * A row handed over (expireMany) is claimed whatever its key's maxAttempts and drop say.
   */
  async takeOverAbandoned(keys: readonly TakeOverKey[], options: { dueBy: number; limit: number }): Promise<TakeOverBatch> {
    if (keys.length === 0) return { claimed: [], toEnd: [], unknown: [] };
    await this.checkReplicationBeforeGranting();
    const statement = this.statements.takeOverAbandoned(
      takeOverParameters(keys, { ...options, fallbackLeaseMs: this.timingDefaults.leaseMs, ownerId: this.nodeId }),
    );
    // Every claimed lease runs from its row's modifiedAt, stamped no earlier than this send.
    const sentAt = monotonicNow();
    let rows: TakeOverRow[];
    try {
      rows = await this.execute<TakeOverRow>(statement);
    } catch (error) {
      // A stricter isolation level saw a concurrent claim: nothing claimed, as for acquire.
      if (isSerializationFailure(error)) return { claimed: [], toEnd: [], unknown: [] };
      throw error;
    }
    const batch = takeOverBatchOf(rows, keys, this.timingDefaults, sentAt);
    for (let index = 0; index < batch.claimed.length; index++) this.telemetry.count('acquire', 'reclaimed');
    return batch;
  }

  /**
   * Of these codes, the (code, runKey prefix) pairs that have occurrences RUNNING past their lease
   * by the database clock and due by `dueBy` (epoch ms, the scheduler's clock), up to `limit`
   * pairs; reads only. A take-over scan over many keys asks this first, then claims with only
   * the keys found.
   */
  async abandonedKeys(codes: readonly string[], options: { dueBy: number; limit: number }): Promise<Array<{ code: string; prefix: string }>> {
    if (codes.length === 0) return [];
    const statement = this.statements.abandonedKeys(codes, this.timingDefaults.leaseMs, new Date(options.dueBy).toISOString(), options.limit);
    return this.execute<{ code: string; prefix: string }>(statement);
  }

  /**
   * Ends abandoned occurrences FAIL with their `data`, each unless it was taken over, handed over
   * or ended meanwhile (still RUNNING past its lease with the attempts and hand-over mark seen),
   * in one statement: whether each applied, in order.
   */
  async abandonOccurrences(occurrences: readonly { id: string; attempts: number; handedOver: boolean; data: unknown }[]): Promise<boolean[]> {
    if (occurrences.length === 0) return [];
    const rows = await this.execute<{ id: string }>(
      this.statements.abandonOccurrences(
        occurrences.map((occurrence) => occurrence.id),
        occurrences.map((occurrence) => occurrence.attempts),
        occurrences.map((occurrence) => occurrence.handedOver),
        occurrences.map((occurrence) => serializeJobData(occurrence.data) ?? 'null'),
        this.timingDefaults.leaseMs,
      ),
    );
    const applied = new Set(rows.map((row) => row.id));
    return occurrences.map((occurrence) => applied.has(occurrence.id));
  }

  /**
   * Ends FAIL with its `data` every occurrence of each (code, runKey prefix) RUNNING past its
   * lease (those of a dynamic schedule removed meanwhile), in one statement: the rows ended.
   */
  async abandonRunKeyRanges(ranges: readonly { code: string; prefix: string; data: unknown }[]): Promise<{ id: string; code: string; runKey: string }[]> {
    if (ranges.length === 0) return [];
    return this.execute(
      this.statements.abandonRunKeyRanges(
        ranges.map((range) => range.code),
        ranges.map((range) => range.prefix),
        ranges.map((range) => serializeJobData(range.data) ?? 'null'),
        this.timingDefaults.leaseMs,
      ),
    );
  }

  /** The occurrence runKeys recorded for `code` from `from` (inclusive) to `to` (exclusive), in "C" order. */
  async scheduledRunKeysBetween(code: string, from: string, to: string): Promise<string[]> {
    const rows = await this.execute<{ runKey: string }>(this.statements.scheduledRunKeysBetween(code, from, to));
    return rows.map((row) => row.runKey);
  }

  /**
   * Runs `fn` only on the node that acquires the run, keeping the lease alive with heartbeats.
   * Success → SUCCESS; a thrown error → FAIL `{ error: { name, message } }` and the same error
   * rethrown; ownership lost before finalization → LostJobLeaseError.
   */
  runExclusive<T>(options: JobAcquireOptions, fn: (lease: JobExecutionLease) => Promise<T>): Promise<RunExclusiveResult<T>> {
    return this.runs.runExclusive(options, fn);
  }

  /**
   * Runs `fn` under a lease this node already acquired (a run of acquireBatch, an occurrence the
   * take-over claimed), as runExclusive runs it once acquired: heartbeats, the local deadline,
   * SUCCESS or FAIL, the signal, shutdown. Throws what runExclusive throws. With
   * `{ recordHandlerMs: true }` the row's data records how long `fn` ran (`handlerMs`).
   */
  runAcquired<T>(lock: JobAcquiredLease, fn: (lease: JobExecutionLease) => Promise<T>, options?: JobRunAcquiredOptions): Promise<T> {
    return this.runs.runAcquired(lock, fn, options);
  }

  /**
   * Reads the replication of the server the lease writes to: streaming standbys, the synchronous
   * standbys named, synchronous_commit, and whether a failover could forget acknowledged leases.
   */
  async replicationStatus(): Promise<JobLeaseReplicationStatus> {
    const [row] = await this.execute<ReplicationRow>(this.statements.replication());
    const status = assessReplication(row);
    this.replication = { status, readAt: monotonicNow() };
    if (status.risk !== null && !this.replicationWarned) {
      this.replicationWarned = true;
      const consequence = this.requireSynchronousReplication
        ? 'leases are refused until it is fixed'
        : 'set requireSynchronousReplication: true to refuse leases then';
      this.logger.warn(`Lease safety across failovers: ${status.risk}. See README, "Failover"; ${consequence}.`);
    }
    return status;
  }

  /**
   * Refuses a second lease module in one application (two services would not share shutdown or
   * settings), then a database without the lease's table, columns or sequence: the boot fails
   * with JobSchedulerSchemaError naming each with its migration (at init, before any timer of the
   * scheduler or @RunOnce starts at bootstrap).
   */
  async onModuleInit(): Promise<void> {
    const instances = new Set(this.moduleRef?.get(JobSchedulerService, { strict: false, each: true }) ?? []);
    if (instances.size > 1) {
      const options = this.moduleRef?.get<JobSchedulerRuntimeOptions>(JOB_SCHEDULER_MODULE_OPTIONS, { strict: false, each: true }) ?? [];
      throw moduleErrors.duplicateModule(instances.size, describeDifference(differingKeysAmong(options)));
    }
    await checkSchemaAtBoot(
      this.executor,
      leaseSchema(this.executor.leaseTableName, (name) => this.executor.tableNamed(name)),
      this.logger,
    );
  }

  /** At boot: reads the replication once and warns if a failover could forget leases. */
  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.replicationStatus();
    } catch (error) {
      this.logger.warn(`Could not read the database's replication settings at boot: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /**
   * On application shutdown: aborts every running callback's signal, waits up to the grace for
   * them to settle, then releases the leases still held (fenced: another node's lease is safe).
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.runs.shutdown();
    await this.announcements?.close();
  }

  /** The fenced statements a hold of `lease` sends, through this service's executor and telemetry. */
  private holdStatements(lease: JobLease): HoldStatements {
    const { id, ownerToken } = lease;
    return {
      prepare: (data) => serializeJobData(data),
      heartbeat: (timeoutMs) => this.applies('heartbeat', id, this.statements.heartbeat(id, ownerToken), timeoutMs),
      finalize: (outcome, data, again, timeoutMs) => {
        const json = data as string | null;
        const statement =
          outcome === 'complete'
            ? (again ? this.statements.completeAgain : this.statements.complete)(id, ownerToken, json)
            : (again ? this.statements.failAgain : this.statements.fail)(id, ownerToken, json);
        return this.applies(outcome, id, statement, timeoutMs);
      },
    };
  }

  /**
   * With requireSynchronousReplication, refuses to grant a lease while the reading (at most 30 s
   * old) says a failover could forget it.
   */
  private async checkReplicationBeforeGranting(): Promise<void> {
    if (!this.requireSynchronousReplication) return;
    const reading = this.replication;
    const status = reading && monotonicNow() - reading.readAt < REPLICATION_RECHECK_MS ? reading.status : await this.replicationStatus();
    if (status.risk !== null) throw replicationErrors.unsafe(status.risk);
  }

  private async finalizeMany(status: 'SUCCESS' | 'FAIL', leases: readonly JobLeaseWithData[], data: unknown, options: unknown): Promise<boolean[]> {
    const again = checkFinalizeAgain(options);
    const shared = serializeJobData(data);
    // Every lease and every row's data checked before any statement.
    const json = leases.map((lease) => {
      const own = typeof lease === 'object' && lease !== null ? ownValue(lease, 'data') : undefined;
      return own === undefined ? shared : serializeJobData(own);
    });
    return this.countedPerLease(
      status === 'SUCCESS' ? 'complete' : 'fail',
      this.appliedPerChunk(leases, (ids, ownerTokens, start) =>
        this.statements.finalizeMany(status, ids, ownerTokens, json.slice(start, start + ids.length), again),
      ),
      leases.length,
    );
  }

  /**
   * Counts each lease's outcome of a statement over many, as each run of a batch acquire is
   * counted (job_lease_operations_total): applied (extended for a heartbeat) or lost, or error for
   * each when the database failed.
   */
  private countedPerLease(operation: LeaseOperation, outcomes: Promise<boolean[]>, leases: number): Promise<boolean[]> {
    return outcomes.then(
      (applied) => {
        for (const each of applied) this.telemetry.count(operation, fencedOutcome(operation, each));
        return applied;
      },
      (error: unknown) => {
        if (error instanceof JobLeaseDatabaseError) for (let index = 0; index < leases; index++) this.telemetry.count(operation, 'error');
        throw error;
      },
    );
  }

  /**
   * A fenced statement over many leases, one per 1,000 (`statementOf` gets their ids and owner
   * tokens and the index of the first, and returns the ids it applied to): whether each lease
   * applied, in order.
   */
  private async appliedPerChunk(
    leases: readonly JobLease[],
    statementOf: (ids: string[], ownerTokens: string[], start: number) => SqlStatement,
    timeoutMs?: number,
  ): Promise<boolean[]> {
    const checked = leases.map((lease) => checkJobLease(lease));
    const applied = new Set<string>();
    for (let start = 0; start < checked.length; start += 1_000) {
      const chunk = checked.slice(start, start + 1_000);
      const statement = statementOf(
        chunk.map((lease) => lease.id),
        chunk.map((lease) => lease.ownerToken),
        start,
      );
      for (const row of await this.execute<{ id: string }>(statement, timeoutMs)) applied.add(row.id);
    }
    return checked.map((lease) => applied.has(lease.id));
  }

  /** Runs a fenced mutation: true if it applied (this owner still held the run RUNNING). */
  private applies(operation: LeaseOperation, leaseId: string, statement: SqlStatement, timeoutMs?: number): Promise<boolean> {
    return this.telemetry.observe(
      operation,
      { leaseId },
      async () => (await this.execute(statement, timeoutMs)).length === 1,
      (applied) => fencedOutcome(operation, applied),
    );
  }

  /** A heartbeat's own bound (`timeoutMs`, checked), never past the configured statement timeout. */
  private heartbeatTimeoutMs(options: unknown): number | undefined {
    const timeoutMs = checkStatementTimeout(options);
    return timeoutMs === undefined ? undefined : Math.min(timeoutMs, this.executor.statementTimeoutMs);
  }

  private execute<Row = Record<string, unknown>>(statement: SqlStatement, timeoutMs?: number): Promise<Row[]> {
    return this.executor.rows<Row>(statement, timeoutMs);
  }
}
