import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type BeforeApplicationShutdown, Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DEFAULT_SHUTDOWN_GRACE_MS, JOB_SCHEDULER_DATA_SOURCE, MAX_TIMER_MS, RELEASED_DATA } from './job-scheduler.constants';
import type { JobSchedulerStatus } from './job-scheduler.entity';
import { JobSchedulerExecutor } from './job-scheduler.executor';
import { JobShutdownError, LostJobLeaseError, moduleErrors } from './job-scheduler.errors';
import { JOB_SCHEDULER_MODULE_OPTIONS, type JobSchedulerRuntimeOptions } from './job-scheduler.module-definition';
import type { AcquireRow, JobSchedulerStatements, SqlStatement } from './job-scheduler.sql';
import type {
  JobAcquireOptions,
  JobAcquireResult,
  JobExecutionLease,
  JobLease,
  RunExclusiveResult,
} from './job-scheduler.types';
import { resolvePruneOptions } from './job-run-arguments';
import type { JobPruneOptions } from './job-run.types';
import { checkJobLease, describeFailure, resolveAcquireRequest, serializeJobData } from './lease-arguments';
import { LeaseHeartbeat } from './lease-heartbeat';
import { createLeaseTelemetry, type LeaseOperation, type LeaseTelemetry } from './lease-telemetry';
import { type ResolvedTimingDefaults, resolveTimingDefaults } from './lease-timing';

const NOT_ACQUIRED: JobAcquireResult = Object.freeze({ acquired: false });

/** acquired | reclaimed | held (RUNNING, or a concurrent insert) | success-locked | fail-locked. */
const acquireOutcome = (row: AcquireRow | undefined): string => {
  if (row?.id) return row.reclaimed ? 'reclaimed' : 'acquired';
  if (row?.status === 'SUCCESS') return 'success-locked';
  if (row?.status === 'FAIL') return 'fail-locked';
  return 'held';
};

/** SQLSTATE 40001: a stricter isolation level saw a concurrent winner. For acquire, a lost race. */
const isSerializationFailure = (error: unknown): boolean => {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  return candidate?.code === '40001' || candidate?.driverError?.code === '40001';
};

/** Attaches `cause` to an error that has none, so a secondary failure is not lost. */
const attachCause = (error: unknown, cause: unknown): void => {
  if (typeof error === 'object' && error !== null && !Object.prototype.hasOwnProperty.call(error, 'cause')) {
    Object.defineProperty(error, 'cause', { value: cause, configurable: true, writable: true });
  }
};

const checkNodeId = (nodeId: unknown): string => {
  if (nodeId === undefined) return `${hostname()}:${process.pid}`.slice(0, 256);
  if (typeof nodeId !== 'string' || nodeId.trim() === '' || nodeId.length > 256 || nodeId.includes('\u0000')) {
    throw moduleErrors.nodeId(nodeId);
  }
  return nodeId;
};

const checkGraceMs = (value: unknown): number => {
  if (value === undefined) return DEFAULT_SHUTDOWN_GRACE_MS;
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > MAX_TIMER_MS) {
    throw moduleErrors.shutdownGraceMs(value);
  }
  return value as number;
};

interface ActiveRun {
  lease: JobLease;
  controller: AbortController;
  /** Settles (never rejects) once the run has finished, whatever its outcome. */
  settled: Promise<void>;
  done: boolean;
}

const ignore = (): void => undefined;

/**
 * The PostgreSQL lease. Each method is one statement; runExclusive adds the heartbeat and the
 * finalization around a callback. Owner tokens are never logged.
 */
@Injectable()
export class JobSchedulerService implements BeforeApplicationShutdown {
  private readonly logger = new Logger(JobSchedulerService.name);
  private readonly executor: JobSchedulerExecutor;
  private readonly telemetry: LeaseTelemetry;
  private readonly statements: JobSchedulerStatements;
  private readonly timingDefaults: ResolvedTimingDefaults;
  private readonly nodeId: string;
  private readonly shutdownGraceMs: number;
  private readonly active = new Set<ActiveRun>();

  constructor(
    @Inject(JOB_SCHEDULER_DATA_SOURCE) dataSource: DataSource,
    @Optional() @Inject(JOB_SCHEDULER_MODULE_OPTIONS) options: JobSchedulerRuntimeOptions = {},
  ) {
    this.timingDefaults = resolveTimingDefaults(options.defaults);
    this.nodeId = checkNodeId(options.nodeId);
    this.shutdownGraceMs = checkGraceMs(options.shutdownGraceMs);
    this.executor = new JobSchedulerExecutor(dataSource, {
      preparedStatements: options.preparedStatements,
      onPreparedStatementsOff: (reason) =>
        this.logger.warn(`Sending unnamed statements from now on: ${reason} (a pooler in transaction mode?). Set preparedStatements: false to say so.`),
    });
    this.telemetry = createLeaseTelemetry(options.telemetry);
    this.statements = this.executor.statements;
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
    const ownerToken = randomUUID();
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
    const row = await this.telemetry.observe(
      'acquire',
      { code: identity.code, idempotencyKey: identity.lockKey },
      async (): Promise<AcquireRow | undefined> => {
        try {
          return (await this.execute<AcquireRow>(statement))[0];
        } catch (error) {
          if (isSerializationFailure(error)) return undefined;
          throw error;
        }
      },
      acquireOutcome,
    );
    if (!row || row.id === null) return NOT_ACQUIRED;
    return {
      acquired: true,
      id: row.id,
      ownerToken,
      idempotencyKey: identity.lockKey,
      fencingToken: Number(row.fencingToken),
      attempt: row.attempts as number,
      reclaimed: row.reclaimed === true,
      leaseMs: request.leaseMs,
      heartbeatMs: request.heartbeatMs,
    };
  }

  /** Bumps the row's modifiedAt (database clock) if this owner still holds it RUNNING. */
  async heartbeat(lease: JobLease): Promise<boolean> {
    const { id, ownerToken } = checkJobLease(lease);
    return this.applies('heartbeat', id, this.statements.heartbeat(id, ownerToken));
  }

  /** Marks the owned run SUCCESS with optional JSON data; false if ownership was lost. */
  async complete(lease: JobLease, data?: unknown): Promise<boolean> {
    const { id, ownerToken } = checkJobLease(lease);
    return this.applies('complete', id, this.statements.complete(id, ownerToken, serializeJobData(data)));
  }

  /** Marks the owned run FAIL (immediately reclaimable) with optional JSON data; false if lost. */
  async fail(lease: JobLease, data?: unknown): Promise<boolean> {
    const { id, ownerToken } = checkJobLease(lease);
    return this.applies('fail', id, this.statements.fail(id, ownerToken, serializeJobData(data)));
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
    const { limit, ...parameters } = resolvePruneOptions(options);
    let deleted = 0;
    for (;;) {
      const batchSize = limit === null ? parameters.batchSize : Math.min(parameters.batchSize, limit - deleted);
      if (batchSize <= 0) return deleted;
      const rows = await this.execute(this.statements.prune({ ...parameters, batchSize }));
      deleted += rows.length;
      if (rows.length < batchSize) return deleted;
    }
  }

  /**
   * The greatest runKey recorded for a SCHEDULE run of `code` (of that status, if given) that
   * begins with an ISO 8601 instant (the scheduler's occurrence keys), or null. One indexed read.
   */
  async latestScheduledRunKey(code: string, status?: JobSchedulerStatus.SUCCESS): Promise<string | null> {
    const rows = await this.execute<{ runKey: string }>(this.statements.latestScheduledRunKey(code, status));
    return rows[0]?.runKey ?? null;
  }

  /**
   * Runs `fn` only on the node that acquires the run, keeping the lease alive with heartbeats.
   * Success → SUCCESS; a thrown error → FAIL `{ error: { name, message } }` and the same error
   * rethrown; ownership lost before finalization → LostJobLeaseError.
   */
  async runExclusive<T>(
    options: JobAcquireOptions,
    fn: (lease: JobExecutionLease) => Promise<T>,
  ): Promise<RunExclusiveResult<T>> {
    const lock = await this.acquire(options);
    if (!lock.acquired) return { acquired: false };

    const lease: JobLease = { id: lock.id, ownerToken: lock.ownerToken };
    const controller = new AbortController();
    const heartbeat = new LeaseHeartbeat(
      lock.heartbeatMs,
      () => this.heartbeat(lease),
      (cause) => {
        const reason = cause === undefined ? 'another owner took the run over' : 'a heartbeat could not reach the database';
        controller.abort(new LostJobLeaseError(lease.id, { cause, reason }));
      },
    );
    const run: ActiveRun = { lease, controller, settled: Promise.resolve(), done: false };
    const outcome = this.finishRun(lock, lease, controller, heartbeat, fn).finally(() => {
      run.done = true;
      this.active.delete(run);
    });
    run.settled = outcome.then(ignore, ignore);
    this.active.add(run);
    return { acquired: true, result: await outcome };
  }

  /**
   * On application shutdown: aborts every running callback's signal, waits up to the grace for
   * them to settle, then releases the leases still held (fenced: another node's lease is safe).
   */
  async beforeApplicationShutdown(): Promise<void> {
    const running = [...this.active];
    if (running.length === 0) return;
    for (const run of running) run.controller.abort(new JobShutdownError(run.lease.id));
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.shutdownGraceMs);
    });
    await Promise.race([Promise.all(running.map((run) => run.settled)), grace]);
    clearTimeout(timer);
    const stuck = running.filter((run) => !run.done);
    await Promise.all(
      stuck.map(async (run) => {
        try {
          await this.release(run.lease, { released: true, reason: 'shutdown' });
        } catch (error) {
          this.logger.error(`Could not release job lease ${run.lease.id} on shutdown: ${String(error)}`);
        }
      }),
    );
    if (stuck.length > 0) this.logger.warn(`Released ${stuck.length} job lease(s) still running after the shutdown grace`);
  }

  /**
   * Runs the callback and finalizes. Whenever finalization finds the lease taken over, the signal
   * is aborted with the LostJobLeaseError thrown (unless it already was), so that whatever still
   * listens to it (work the callback left running, cleanup hooks) learns of the loss too.
   */
  private async finishRun<T>(
    lock: { idempotencyKey: string; fencingToken: number; attempt: number },
    lease: JobLease,
    controller: AbortController,
    heartbeat: LeaseHeartbeat,
    fn: (lease: JobExecutionLease) => Promise<T>,
  ): Promise<T> {
    heartbeat.start();
    let result: T;
    try {
      result = await fn({
        id: lease.id,
        ownerToken: lease.ownerToken,
        idempotencyKey: lock.idempotencyKey,
        fencingToken: lock.fencingToken,
        attempt: lock.attempt,
        signal: controller.signal,
      });
    } catch (error) {
      await heartbeat.stop();
      throw (await this.recordFailure(lease, error, controller)).thrown;
    }
    await heartbeat.stop();
    if (!(await this.complete(lease))) {
      const lost = new LostJobLeaseError(lease.id, { reason: 'another owner took the run over before it completed' });
      controller.abort(lost);
      this.telemetry.lost();
      throw lost;
    }
    return result;
  }

  /**
   * Records FAIL for a callback error and returns what runExclusive must throw, wrapped: an async
   * function that returned a thrown thenable would have it adopted instead of rethrown.
   */
  private async recordFailure(lease: JobLease, error: unknown, controller: AbortController): Promise<{ thrown: unknown }> {
    let recorded: boolean;
    try {
      recorded = await this.fail(lease, describeFailure(error));
    } catch (recordError) {
      this.logger.error(`Could not record FAIL for job lease ${lease.id}: ${String(recordError)}`);
      attachCause(error, recordError);
      return { thrown: error };
    }
    if (recorded) return { thrown: error };
    const lost =
      error instanceof LostJobLeaseError
        ? error
        : new LostJobLeaseError(lease.id, { cause: error, reason: 'another owner took the run over before it failed' });
    // A no-op when the heartbeat already aborted it: the first reason stays.
    controller.abort(lost);
    this.telemetry.lost();
    return { thrown: lost };
  }

  /** Runs a fenced mutation: true if it applied (this owner still held the run RUNNING). */
  private applies(operation: LeaseOperation, leaseId: string, statement: SqlStatement): Promise<boolean> {
    return this.telemetry.observe(
      operation,
      { leaseId },
      async () => (await this.execute(statement)).length === 1,
      (applied) => (applied ? (operation === 'heartbeat' ? 'extended' : 'applied') : 'lost'),
    );
  }

  private execute<Row = Record<string, unknown>>(statement: SqlStatement): Promise<Row[]> {
    return this.executor.rows<Row>(statement);
  }
}
