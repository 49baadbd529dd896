import { randomUUID } from 'node:crypto';
import { JobSchedulerStatus } from '../../job-scheduler/job-scheduler.entity';
import type { JobAcquireOptions, JobAcquireResult, JobBatchAcquireOptions, JobLease } from '../../job-scheduler/job-scheduler.types';
import { resolveBatchAcquireRequests, resolveManyAcquireRequests } from '../../job-scheduler/lease-batch-acquire';
import { type AcquireRequest, checkJobLease, resolveAcquireRequest, serializeJobData } from '../../job-scheduler/lease-arguments';
import { provenUntil } from '../../job-scheduler/lease-deadline';
import { resolveTimingDefaults } from '../../job-scheduler/lease-timing';
import { dueInstantOf } from '../occurrence-keys';
import type { AbandonedOccurrence, AbandonedOccurrenceStore } from '../abandoned-occurrences';
import type { SchedulerHistory, SchedulerLease } from '../scheduler-ports';
import { FixedClock } from './fixed-clock';

interface LeaseRow {
  id: string;
  code: string;
  runKey: string | null;
  status: JobSchedulerStatus;
  ownerToken: string;
  fencingToken: number;
  attempts: number;
  leaseMs: number;
  modifiedAt: number;
  data: unknown;
}

/**
 * The lease's rules in memory, on a FixedClock: for tests of one process, where two manual
 * schedulers sharing one instance are two instances. Same validation and keys as the
 * PostgreSQL lease; no durability, no cross-process exclusion.
 */
export class InMemoryJobLease implements SchedulerLease, SchedulerHistory, AbandonedOccurrenceStore {
  private readonly rows = new Map<string, LeaseRow>();
  private readonly timing = resolveTimingDefaults(undefined);
  /** Fencing tokens come from one counter, as from the table's sequence: they never go back. */
  private lastFencingToken = 0;

  constructor(readonly clock: FixedClock = new FixedClock()) {}

  async acquire(options: JobAcquireOptions): Promise<JobAcquireResult> {
    return this.take(resolveAcquireRequest(options, this.timing));
  }

  /** Each run by acquire's rules, validated like the PostgreSQL lease's batch. */
  async acquireBatch(options: JobBatchAcquireOptions): Promise<JobAcquireResult[]> {
    return resolveBatchAcquireRequests(options, this.timing).map((request) => this.take(request));
  }

  /** Each run by acquire's rules, validated like the PostgreSQL lease's acquireMany. */
  async acquireMany(runs: readonly JobAcquireOptions[]): Promise<JobAcquireResult[]> {
    return resolveManyAcquireRequests(runs, this.timing).map((request) => this.take(request));
  }

  private take(request: AcquireRequest): JobAcquireResult {
    const { identity } = request;
    const now = this.clock.now();
    const existing = this.rows.get(identity.lockKey);
    const ownerToken = randomUUID();
    const acquired = (row: LeaseRow, reclaimed: boolean): JobAcquireResult => ({
      acquired: true,
      id: row.id,
      ownerToken,
      idempotencyKey: identity.lockKey,
      fencingToken: row.fencingToken,
      attempt: row.attempts,
      reclaimed,
      leaseMs: request.leaseMs,
      heartbeatMs: request.heartbeatMs,
      heldUntil: provenUntil(now, request.leaseMs),
    });
    if (!existing) {
      const row: LeaseRow = {
        id: randomUUID(),
        code: identity.code,
        runKey: identity.runKey,
        status: JobSchedulerStatus.RUNNING,
        ownerToken,
        fencingToken: ++this.lastFencingToken,
        attempts: 1,
        leaseMs: request.leaseMs,
        modifiedAt: now,
        data: null,
      };
      this.rows.set(identity.lockKey, row);
      return acquired(row, false);
    }
    const reclaimable =
      (existing.status === JobSchedulerStatus.FAIL && request.reclaimFailed) ||
      (existing.status === JobSchedulerStatus.RUNNING && existing.modifiedAt < now - existing.leaseMs);
    if (!reclaimable) return { acquired: false };
    Object.assign(existing, {
      status: JobSchedulerStatus.RUNNING,
      ownerToken,
      fencingToken: ++this.lastFencingToken,
      attempts: existing.attempts + 1,
      leaseMs: request.leaseMs,
      modifiedAt: now,
      data: null,
    });
    return acquired(existing, true);
  }

  async heartbeat(lease: JobLease): Promise<boolean> {
    const row = this.owned(lease);
    if (row) row.modifiedAt = this.clock.now();
    return row !== undefined;
  }

  async complete(lease: JobLease, data?: unknown): Promise<boolean> {
    return this.finish(lease, JobSchedulerStatus.SUCCESS, data);
  }

  async fail(lease: JobLease, data?: unknown): Promise<boolean> {
    return this.finish(lease, JobSchedulerStatus.FAIL, data);
  }

  /** As JobSchedulerService.expireMany: each owned RUNNING row stays RUNNING, its lease run out now. */
  async expireMany(leases: readonly JobLease[]): Promise<boolean[]> {
    return leases.map((lease) => {
      const row = this.owned(lease);
      if (row) row.modifiedAt = this.clock.now() - row.leaseMs - 1;
      return row !== undefined;
    });
  }

  async latestOccurrence(jobName: string): Promise<number | null> {
    let latest: number | null = null;
    for (const row of this.rows.values()) {
      const due = row.code === jobName && row.runKey !== null ? dueInstantOf(row.runKey) : null;
      if (due !== null && (latest === null || due > latest)) latest = due;
    }
    return latest;
  }

  async recordedOccurrences(jobName: string, from: number, until: number): Promise<number[]> {
    const instants: number[] = [];
    for (const row of this.rows.values()) {
      const due = row.code === jobName && row.runKey !== null ? dueInstantOf(row.runKey) : null;
      if (due !== null && due >= from && due < until) instants.push(due);
    }
    return instants;
  }

  async abandonedOccurrences(codes: readonly string[], limit: number): Promise<AbandonedOccurrence[]> {
    const now = this.clock.now();
    const found: AbandonedOccurrence[] = [];
    for (const row of this.rows.values()) {
      const expiredForMs = now - row.modifiedAt - row.leaseMs;
      if (row.status !== JobSchedulerStatus.RUNNING || expiredForMs <= 0 || !codes.includes(row.code)) continue;
      if (row.runKey === null || dueInstantOf(row.runKey) === null) continue;
      found.push({ id: row.id, code: row.code, runKey: row.runKey, attempts: row.attempts, expiredForMs });
    }
    return found.slice(0, limit);
  }

  async abandonOccurrence(occurrence: Pick<AbandonedOccurrence, 'id' | 'attempts'>, data: unknown): Promise<boolean> {
    const now = this.clock.now();
    for (const row of this.rows.values()) {
      if (row.id !== occurrence.id || row.attempts !== occurrence.attempts) continue;
      if (row.status !== JobSchedulerStatus.RUNNING || row.modifiedAt >= now - row.leaseMs) return false;
      const json = serializeJobData(data);
      Object.assign(row, { status: JobSchedulerStatus.FAIL, ownerToken: '', data: json === null ? null : JSON.parse(json), modifiedAt: now });
      return true;
    }
    return false;
  }

  /** Whether any run is RUNNING (held, or left by a holder that stopped): the only rows a take-over scan can find. */
  hasRunningRuns(): boolean {
    for (const row of this.rows.values()) if (row.status === JobSchedulerStatus.RUNNING) return true;
    return false;
  }

  /** Attempts of the run with this code and runKey, for assertions. */
  attemptsOf(code: string, runKey: string): number | undefined {
    for (const row of this.rows.values()) if (row.code === code && row.runKey === runKey) return row.attempts;
    return undefined;
  }

  /** Status of the run with this code and runKey, for assertions. */
  statusOf(code: string, runKey: string): JobSchedulerStatus | undefined {
    for (const row of this.rows.values()) if (row.code === code && row.runKey === runKey) return row.status;
    return undefined;
  }

  private finish(lease: JobLease, status: JobSchedulerStatus, data: unknown): boolean {
    const json = serializeJobData(data);
    const row = this.owned(lease);
    if (!row) return false;
    Object.assign(row, { status, data: json === null ? null : JSON.parse(json), modifiedAt: this.clock.now() });
    return true;
  }

  private owned(lease: JobLease): LeaseRow | undefined {
    const { id, ownerToken } = checkJobLease(lease);
    for (const row of this.rows.values()) {
      if (row.id === id && row.ownerToken === ownerToken && row.status === JobSchedulerStatus.RUNNING) return row;
    }
    return undefined;
  }
}
