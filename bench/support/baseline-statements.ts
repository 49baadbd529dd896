import type { AcquireParameters, SqlStatement } from '../../src/features/job-scheduler/job-scheduler.sql';

/**
 * The acquire algorithms the library is compared with, reimplemented from their description on
 * the same table, writing the same columns as the library's acquire (so the rows are identical
 * and only the algorithm differs).
 */
export interface BaselineStatements {
  /** 1.1, first statement: a fresh insert; no row when the run exists. */
  claim(parameters: AcquireParameters): SqlStatement;
  /** 1.1, second statement (sent only when the insert returned nothing): reclaim FAIL / expired. */
  reclaim(parameters: AcquireParameters): SqlStatement;
  /** One `INSERT ... ON CONFLICT DO UPDATE ... WHERE` statement (graphile-worker's form). */
  upsert(parameters: AcquireParameters): SqlStatement;
}

const INSERTED_COLUMNS = `("lockKey", "code", "name", "type", "status", "ownerToken", "runKey", "leaseMs", "ownerId",
     "fencingToken", "attempts", "startedAt", "createdAt", "modifiedAt")`;
const INSERTED_VALUES = `($1, $2, $3, $4, 'RUNNING', $5, $6, $7, $8,
     1, 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`;
const RETURNED = `t."id", t."fencingToken"::text AS "fencingToken", t."attempts"`;

/** `SET` of a reclaim; `incoming` names the new owner's values. */
const reclaimAssignments = (incoming: { ownerToken: string; name: string; runKey: string; leaseMs: string; ownerId: string }) => `
    "status" = 'RUNNING',
    "ownerToken" = ${incoming.ownerToken},
    "name" = COALESCE(${incoming.name}, t."name"),
    "runKey" = ${incoming.runKey},
    "leaseMs" = ${incoming.leaseMs},
    "ownerId" = ${incoming.ownerId},
    "fencingToken" = t."fencingToken" + 1,
    "attempts" = t."attempts" + 1,
    "lastError" = CASE WHEN t."status" = 'FAIL' THEN t."data"
      ELSE jsonb_build_object('expired', true, 'ownerId', t."ownerId", 'lastHeartbeatAt', t."modifiedAt") END,
    "data" = NULL,
    "startedAt" = CURRENT_TIMESTAMP,
    "finishedAt" = NULL,
    "modifiedAt" = CURRENT_TIMESTAMP`;

const reclaimable = (reclaimFailed: string, leaseMs: string) => `(
      (t."status" = 'FAIL' AND ${reclaimFailed}::boolean)
      OR (t."status" = 'RUNNING'
          AND t."modifiedAt" < CURRENT_TIMESTAMP - COALESCE(t."leaseMs", ${leaseMs}) * INTERVAL '1 millisecond')
    )`;

export const createBaselineStatements = (table: string): BaselineStatements => {
  const claimText = `
INSERT INTO ${table} AS t ${INSERTED_COLUMNS}
  VALUES ${INSERTED_VALUES}
  ON CONFLICT ("lockKey") DO NOTHING
  RETURNING ${RETURNED}, false AS "reclaimed"`.trim();

  const reclaimText = `
UPDATE ${table} AS t SET ${reclaimAssignments({ ownerToken: '$2', name: '$3', runKey: '$4', leaseMs: '$5', ownerId: '$6' })}
  WHERE t."lockKey" = $1 AND ${reclaimable('$7', '$5')}
  RETURNING ${RETURNED}, true AS "reclaimed"`.trim();

  const upsertText = `
INSERT INTO ${table} AS t ${INSERTED_COLUMNS}
  VALUES ${INSERTED_VALUES}
  ON CONFLICT ("lockKey") DO UPDATE SET ${reclaimAssignments({
    ownerToken: 'EXCLUDED."ownerToken"',
    name: 'EXCLUDED."name"',
    runKey: 'EXCLUDED."runKey"',
    leaseMs: 'EXCLUDED."leaseMs"',
    ownerId: 'EXCLUDED."ownerId"',
  })}
  WHERE ${reclaimable('$9', '$7')}
  RETURNING ${RETURNED}, (t."attempts" > 1) AS "reclaimed"`.trim();

  return {
    claim: (p) => ({ text: claimText, values: [p.lockKey, p.code, p.name, p.type, p.ownerToken, p.runKey, p.leaseMs, p.ownerId], operation: 'acquire' }),
    reclaim: (p) => ({ text: reclaimText, values: [p.lockKey, p.ownerToken, p.name, p.runKey, p.leaseMs, p.ownerId, p.reclaimFailed], operation: 'acquire' }),
    upsert: (p) => ({
      text: upsertText,
      values: [p.lockKey, p.code, p.name, p.type, p.ownerToken, p.runKey, p.leaseMs, p.ownerId, p.reclaimFailed],
      operation: 'acquire',
    }),
  };
};
