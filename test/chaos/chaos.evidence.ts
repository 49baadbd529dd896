import { readFileSync } from 'node:fs';
import { adminQuery } from './chaos.admin';
import { type LoggedEvent, readEventLog } from './chaos.event-log';
import type { ChaosFleet } from './chaos.fleet';

export interface LeaseRow {
  lockKey: string;
  code: string;
  runKey: string;
  status: 'RUNNING' | 'SUCCESS' | 'FAIL';
  fencingToken: number;
  attempts: number;
  ownerId: string | null;
  ownerToken: string | null;
  leaseMs: number | null;
  /** For a run last taken over because its lease expired: new start minus the last heartbeat. */
  reclaimGapMs: number | null;
}

export interface FenceLogRow {
  id: number;
  resource: string;
  fencingToken: number;
  leaseToken: number | null;
}

export interface WorkerEvidence {
  nodeId: string;
  slot: number;
  clockSkewMs: number;
  crashed: boolean;
  exit: string;
  outputTail: string;
  events: LoggedEvent[];
  /** Everything the process printed and logged, to look for secrets in. */
  text: string;
}

/** What the checks look at once the run is over: the database and every worker's logs. */
export interface ChaosEvidence {
  leases: LeaseRow[];
  /** Side-effect (outbox) rows per resource. */
  effectsPerResource: Map<string, number>;
  fenceLog: FenceLogRow[];
  resourceFence: Map<string, number>;
  workers: WorkerEvidence[];
}

const readText = (file: string): string => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
};

export const collectEvidence = async (databaseUrl: string, fleet: ChaosFleet): Promise<ChaosEvidence> => {
  const leases = await adminQuery<LeaseRow>(
    databaseUrl,
    `SELECT "lockKey", "code", "runKey", "status", "fencingToken"::int AS "fencingToken", "attempts", "ownerId",
       "ownerToken"::text AS "ownerToken", "leaseMs",
       CASE WHEN ("lastError" ->> 'expired') = 'true'
         THEN (EXTRACT(EPOCH FROM ("startedAt" - ("lastError" ->> 'lastHeartbeatAt')::timestamptz)) * 1000)::float8
       END AS "reclaimGapMs"
     FROM "job-scheduler"`,
  );
  const effects = await adminQuery<{ resource: string; rows: number }>(
    databaseUrl,
    `SELECT "resource", count(*)::int AS "rows" FROM chaos_effect GROUP BY "resource"`,
  );
  const fenceLog = await adminQuery<FenceLogRow>(
    databaseUrl,
    `SELECT "id"::int AS "id", "resource", "fencingToken"::int AS "fencingToken", "leaseToken"::int AS "leaseToken"
     FROM chaos_fence_log ORDER BY "id"`,
  );
  const resources = await adminQuery<{ resource: string; fence: number }>(databaseUrl, `SELECT "resource", "fence"::int AS "fence" FROM chaos_resource`);
  return {
    leases,
    effectsPerResource: new Map(effects.map((row) => [row.resource, row.rows])),
    fenceLog,
    resourceFence: new Map(resources.map((row) => [row.resource, row.fence])),
    workers: fleet.all.map((worker) => ({
      nodeId: worker.nodeId,
      slot: worker.slot,
      clockSkewMs: worker.clockSkewMs,
      crashed: worker.crashed,
      exit: worker.exit ? `code ${worker.exit.code} signal ${worker.exit.signal}` : 'running',
      outputTail: worker.crashed ? worker.outputTail() : '',
      events: readEventLog(worker.eventsFile),
      text: readText(worker.outputFile) + readText(worker.eventsFile),
    })),
  };
};
