import { randomUUID } from 'node:crypto';
import { JobSchedulerStatus } from '../../job-scheduler/job-scheduler.entity';
import type {
  JobAcquireManyOptions,
  JobAcquireManyRun,
  JobAcquireOptions,
  JobAcquireResult,
  JobBatchAcquireOptions,
  JobFinalizeOptions,
  JobLease,
} from '../../job-scheduler/job-scheduler.types';
import { resolveBatchAcquireRequests, resolveManyAcquireRequests } from '../../job-scheduler/lease-batch-acquire';
import {
  type AcquireRequest,
  checkClaimAgain,
  checkClaimAnnounce,
  checkJobLease,
  resolveAcquireRequest,
  serializeJobData,
} from '../../job-scheduler/lease-arguments';
import { provenUntil } from '../../job-scheduler/run/lease-deadline';
import { defaultHeartbeatMs, resolveTimingDefaults } from '../../job-scheduler/lease-timing';
import { dueInstantOf, occurrenceOfRunKey } from '../occurrence/occurrence-keys';
import { runKeyPrefixOf, type TakeOverBatch, type TakeOverKey, takeOverKeyOf } from '../../job-scheduler/lease-take-over';
import type { AbandonedOccurrenceStore, SchedulerHistory, SchedulerLease } from '../scheduler-ports';
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

  /** Each run by acquire's rules, validated like the PostgreSQL lease's acquireMany; `{ again }` as its. */
  async acquireMany(runs: readonly JobAcquireManyRun[], options?: JobAcquireManyOptions): Promise<JobAcquireResult[]> {
    const requests = resolveManyAcquireRequests(runs, this.timing);
    const again = checkClaimAgain(options);
    // Validated as the PostgreSQL lease's; one process has nothing to announce to.
    checkClaimAnnounce(options);
    return requests.map((request) => this.take(request, again));
  }

  private take(request: AcquireRequest, again = false): JobAcquireResult {
    const { identity } = request;
    const now = this.clock.now();
    const existing = this.rows.get(identity.lockKey);
    const ownerToken = request.ownerToken ?? randomUUID();
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
    // A retry of a claim that won this row (its answer lost): the same run, its lease renewed.
    if (again && existing.status === JobSchedulerStatus.RUNNING && existing.ownerToken === request.ownerToken) {
      existing.modifiedAt = now;
      return acquired(existing, existing.attempts > 1);
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

  async complete(lease: JobLease, data?: unknown, options?: JobFinalizeOptions): Promise<boolean> {
    return this.finish(lease, JobSchedulerStatus.SUCCESS, data, options?.again === true);
  }

  async fail(lease: JobLease, data?: unknown, options?: JobFinalizeOptions): Promise<boolean> {
    return this.finish(lease, JobSchedulerStatus.FAIL, data, options?.again === true);
  }

  /** As JobSchedulerService.expireMany: each owned RUNNING row stays RUNNING, its lease run out now, marked handed over. */
  async expireMany(leases: readonly JobLease[]): Promise<boolean[]> {
    return leases.map((lease) => {
      const row = this.owned(lease);
      if (row) Object.assign(row, { modifiedAt: this.clock.now() - row.leaseMs - 1, data: { handedOver: true } });
      return row !== undefined;
    });
  }

  async latestOccurrence(jobName: string, until = Infinity): Promise<number | null> {
    let latest: number | null = null;
    for (const row of this.rows.values()) {
      const due = row.code === jobName && row.runKey !== null ? dueInstantOf(row.runKey) : null;
      if (due !== null && due <= until && (latest === null || due > latest)) latest = due;
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

  /** The occurrences of these codes RUNNING past their lease and due by `dueBy`, oldest lease first. */
  private abandoned(codes: ReadonlySet<string>, dueBy: number): Array<[string, LeaseRow]> {
    const now = this.clock.now();
    return [...this.rows.entries()]
      .filter(([, row]) => row.status === JobSchedulerStatus.RUNNING && row.modifiedAt < now - row.leaseMs && codes.has(row.code) && row.runKey !== null)
      .filter(([, row]) => {
        const due = occurrenceOfRunKey(row.runKey as string)?.scheduledAt;
        return due !== undefined && due <= dueBy;
      })
      .sort(([, a], [, b]) => a.modifiedAt - b.modifiedAt);
  }

  /** As JobSchedulerService.abandonedKeys. */
  async abandonedKeys(codes: readonly string[], options: { dueBy: number; limit: number }): Promise<Array<{ code: string; prefix: string }>> {
    const found = new Map<string, { code: string; prefix: string }>();
    for (const [, row] of this.abandoned(new Set(codes), options.dueBy)) {
      const prefix = runKeyPrefixOf(row.runKey as string);
      found.set(takeOverKeyOf(row.code, prefix), { code: row.code, prefix });
    }
    return [...found.values()].slice(0, options.limit);
  }

  /** As JobSchedulerService.takeOverAbandoned, by the same rules (see takeOverAbandoned in job-scheduler.sql.ts). */
  async takeOverAbandoned(keys: readonly TakeOverKey[], options: { dueBy: number; limit: number }): Promise<TakeOverBatch> {
    const now = this.clock.now();
    const byKey = new Map(keys.map((key) => [takeOverKeyOf(key.code, key.prefix), key]));
    const batch: TakeOverBatch = { claimed: [], toEnd: [], unknown: [] };
    const claimedKeys = new Set<string>();
    const expired = this.abandoned(new Set(keys.map((key) => key.code)), options.dueBy);
    for (const [lockKey, row] of expired) {
      const runKey = row.runKey as string;
      const mapKey = takeOverKeyOf(row.code, runKeyPrefixOf(runKey));
      const key = byKey.get(mapKey);
      const expiredForMs = now - row.modifiedAt - row.leaseMs;
      const handedOver = (row.data as { handedOver?: unknown } | null)?.handedOver === true;
      if (!key) {
        if (!batch.unknown.some((unknown) => takeOverKeyOf(unknown.code, unknown.prefix) === mapKey))
          batch.unknown.push({ code: row.code, prefix: runKeyPrefixOf(runKey) });
        continue;
      }
      const reason =
        !handedOver && key.drop
          ? 'drop'
          : !handedOver && row.attempts >= key.maxAttempts
            ? 'attempts'
            : key.lateMs !== null && expiredForMs > key.lateMs
              ? 'late'
              : null;
      if (reason !== null) {
        batch.toEnd.push({ id: row.id, code: row.code, runKey, attempts: row.attempts, handedOver, expiredForMs, reason });
        continue;
      }
      // One row per key per batch; a per-tenant occurrence's tenants run side by side: one key each.
      const claimKey = row.runKey?.includes(' tenant=') ? `${mapKey} ${row.runKey}` : mapKey;
      if (!key.claimable || claimedKeys.has(claimKey) || batch.claimed.length >= options.limit) continue;
      claimedKeys.add(claimKey);
      const leaseMs = key.leaseMs ?? row.leaseMs;
      const ownerToken = randomUUID();
      Object.assign(row, { ownerToken, fencingToken: ++this.lastFencingToken, attempts: row.attempts + 1, leaseMs, modifiedAt: now, data: null });
      const heartbeatMs =
        key.heartbeatMs !== undefined && (key.heartbeatMs === 0 || key.heartbeatMs * 2 < leaseMs) ? key.heartbeatMs : defaultHeartbeatMs(leaseMs);
      batch.claimed.push({
        code: row.code,
        runKey,
        handedOver,
        expiredForMs,
        lock: {
          id: row.id,
          ownerToken,
          idempotencyKey: lockKey,
          fencingToken: row.fencingToken,
          attempt: row.attempts,
          reclaimed: true,
          leaseMs,
          heartbeatMs,
          heldUntil: provenUntil(now, leaseMs),
        },
      });
    }
    batch.toEnd.splice(options.limit);
    batch.unknown.splice(options.limit);
    return batch;
  }

  /** As JobSchedulerService.abandonOccurrences. */
  async abandonOccurrences(occurrences: readonly { id: string; attempts: number; handedOver: boolean; data: unknown }[]): Promise<boolean[]> {
    const now = this.clock.now();
    return occurrences.map((occurrence) => {
      const row = [...this.rows.values()].find((candidate) => candidate.id === occurrence.id);
      const handedOver = (row?.data as { handedOver?: unknown } | null | undefined)?.handedOver === true;
      if (!row || row.status !== JobSchedulerStatus.RUNNING || row.attempts !== occurrence.attempts || handedOver !== occurrence.handedOver) return false;
      if (row.modifiedAt >= now - row.leaseMs) return false;
      this.end(row, occurrence.data);
      return true;
    });
  }

  /** As JobSchedulerService.abandonRunKeyRanges. */
  async abandonRunKeyRanges(ranges: readonly { code: string; prefix: string; data: unknown }[]): Promise<{ id: string; code: string; runKey: string }[]> {
    const now = this.clock.now();
    const ended: { id: string; code: string; runKey: string }[] = [];
    for (const row of this.rows.values()) {
      const range = ranges.find((candidate) => candidate.code === row.code && row.runKey !== null && row.runKey.startsWith(candidate.prefix));
      if (!range || row.status !== JobSchedulerStatus.RUNNING || row.modifiedAt >= now - row.leaseMs) continue;
      this.end(row, range.data);
      ended.push({ id: row.id, code: row.code, runKey: row.runKey as string });
    }
    return ended;
  }

  private end(row: LeaseRow, data: unknown): void {
    const json = serializeJobData(data);
    Object.assign(row, {
      status: JobSchedulerStatus.FAIL,
      ownerToken: '',
      data: json === null ? null : (JSON.parse(json) as unknown),
      modifiedAt: this.clock.now(),
    });
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

  private finish(lease: JobLease, status: JobSchedulerStatus, data: unknown, again: boolean): boolean {
    const json = serializeJobData(data);
    const row = this.owned(lease);
    if (!row) return again && this.finishedBy(lease, status);
    Object.assign(row, { status, data: json === null ? null : (JSON.parse(json) as unknown), modifiedAt: this.clock.now() });
    return true;
  }

  /** Whether this owner already finalized the run with this status (a retry whose first answer was lost). */
  private finishedBy(lease: JobLease, status: JobSchedulerStatus): boolean {
    for (const row of this.rows.values()) if (row.id === lease.id && row.ownerToken === lease.ownerToken) return row.status === status;
    return false;
  }

  private owned(lease: JobLease): LeaseRow | undefined {
    const { id, ownerToken } = checkJobLease(lease);
    for (const row of this.rows.values()) {
      if (row.id === id && row.ownerToken === ownerToken && row.status === JobSchedulerStatus.RUNNING) return row;
    }
    return undefined;
  }
}
