import { readJsonLines } from '../../support/fleet';
import { adminQuery } from '../chaos.admin';
import { DECLARED_JOBS, DYNAMIC_HANDLER } from './scheduler-chaos.catalogue';
import type { ChaosFleet } from './scheduler-chaos.fleet';
import type { JournalLine, RunEnd, RunStart } from './scheduler-chaos.protocol';
import type { InstanceLife, LeaseRow, RunEvidence } from './scheduler-chaos.verdict';

/** Every lease code the run's jobs use. */
export const CHAOS_CODES = [...DECLARED_JOBS.map((job) => job.code), DYNAMIC_HANDLER];

interface RunRow extends Omit<RunStart, 'scheduledAt' | 'fencingToken' | 'startedMs' | 'wallStartedMs' | 'tenantId' | 'scheduleId'> {
  scheduledAt: Date;
  fencingToken: string;
  startedMs: string;
  wallStartedMs: string;
  tenantId: string | null;
  scheduleId: string | null;
  endedMs: string | null;
  outcome: RunEnd['outcome'] | null;
  reason: string | null;
}

/**
 * The handlers' records: every journal line and every chaos_runs row, merged by run id. A run
 * is in a journal unless its process died between two lines (then its row still tells), and in
 * the table unless its process died before the recorder's insert was sent.
 */
export const collectRuns = async (url: string, fleet: ChaosFleet): Promise<RunEvidence[]> => {
  const runs = new Map<string, RunEvidence>();
  for (const instance of fleet.all) {
    const ends = new Map<string, RunEnd>();
    for (const line of readJsonLines<JournalLine>(instance.journalFile)) {
      if (line.type === 'start') {
        const { type: _type, ...start } = line;
        runs.set(start.runId, { ...start, inJournal: true, inDb: false });
      } else if (line.type === 'end') {
        const { type: _type, ...end } = line;
        ends.set(end.runId, end);
      }
    }
    for (const [runId, end] of ends) {
      const run = runs.get(runId);
      if (run) Object.assign(run, { endedMs: end.endedMs, outcome: end.outcome, ...(end.reason ? { reason: end.reason } : {}) });
    }
  }
  const rows = await adminQuery<RunRow>(url, 'SELECT * FROM chaos_runs');
  for (const row of rows) {
    const known = runs.get(row.runId);
    if (known) {
      known.inDb = true;
      if (known.endedMs === undefined && row.endedMs !== null) {
        Object.assign(known, { endedMs: Number(row.endedMs), outcome: row.outcome ?? undefined, ...(row.reason ? { reason: row.reason } : {}) });
      }
      continue;
    }
    runs.set(row.runId, {
      runId: row.runId,
      nodeId: row.nodeId,
      pid: row.pid,
      kind: row.kind,
      code: row.code,
      runKey: row.runKey,
      scheduledAt: row.scheduledAt.getTime(),
      ...(row.tenantId === null ? {} : { tenantId: row.tenantId }),
      ...(row.scheduleId === null ? {} : { scheduleId: row.scheduleId }),
      fencingToken: Number(row.fencingToken),
      idempotencyKey: row.idempotencyKey,
      trigger: row.trigger,
      plannedMs: row.plannedMs,
      startedMs: Number(row.startedMs),
      wallStartedMs: Number(row.wallStartedMs),
      ...(row.endedMs === null ? {} : { endedMs: Number(row.endedMs) }),
      ...(row.outcome === null ? {} : { outcome: row.outcome }),
      ...(row.reason === null ? {} : { reason: row.reason }),
      inJournal: false,
      inDb: true,
    });
  }
  return [...runs.values()];
};

/** The lease table's rows of the run's jobs, as the library left them. */
export const collectLeaseRows = async (url: string): Promise<LeaseRow[]> => {
  const rows = await adminQuery<{
    code: string;
    runKey: string;
    status: LeaseRow['status'];
    data: unknown;
    lastError: unknown;
    attempts: number;
    fencingToken: string;
    ownerId: string | null;
    lockKey: string;
    modifiedAt: Date;
    finishedAt: Date | null;
  }>(
    url,
    `SELECT "code", "runKey", "status", "data", "lastError", "attempts", "fencingToken", "ownerId", "lockKey", "modifiedAt", "finishedAt"
     FROM "job-scheduler" WHERE "code" = ANY($1) AND "runKey" IS NOT NULL`,
    [CHAOS_CODES],
  );
  return rows.map((row) => ({
    code: row.code,
    runKey: row.runKey,
    status: row.status,
    data: row.data,
    lastError: row.lastError,
    attempts: row.attempts,
    fencingToken: Number(row.fencingToken),
    ownerId: row.ownerId,
    lockKey: row.lockKey,
    modifiedMs: row.modifiedAt.getTime(),
    finishedMs: row.finishedAt?.getTime() ?? null,
  }));
};

export const instanceLives = (fleet: ChaosFleet): InstanceLife[] =>
  fleet.all.map((instance) => ({
    nodeId: instance.nodeId,
    slot: instance.slot,
    proxied: instance.proxied,
    spawnedMs: instance.startedMs,
    ...(instance.readyMs === undefined ? {} : { readyMs: instance.readyMs }),
    ...(instance.closingMs === undefined ? {} : { closingMs: instance.closingMs }),
    ...(instance.killedMs === undefined ? {} : { killedMs: instance.killedMs }),
    ...(instance.exitMs === undefined ? {} : { exitMs: instance.exitMs }),
    stops: instance.stops.map((stop) => ({ ...stop })),
  }));
