// Helpers of migration 1764547200005, apart from it: TypeORM loads every exported function of a
// file its migrations glob matches as a migration.

/** The function's name and argument types, as `DROP FUNCTION` and `GRANT EXECUTE` name it. */
export const acquireFunctionSignature = (functionName: string, typeEnum: string): string =>
  `${functionName}(varchar, varchar, varchar, ${typeEnum}, uuid, varchar, integer, varchar, boolean)`;

/**
 * The acquire statement the function runs: the lease's one-statement acquire of this release,
 * frozen here as a migration must be (a unit test compares it with job-scheduler.sql.ts; a later
 * change of the statement ships a migration that replaces the function). $1..$9 are the
 * function's arguments: lockKey, code, name, type, ownerToken, runKey, leaseMs, ownerId,
 * reclaimFailed.
 */
export const acquireFunctionStatement = (table: string, fencingTokenSequence: string): string => {
  const nextFencingToken = `'${fencingTokenSequence.replace(/'/g, "''")}'`;
  return `
WITH inserted AS (
  INSERT INTO ${table} AS t
    ("lockKey", "code", "name", "type", "status", "ownerToken", "runKey", "leaseMs", "ownerId",
     "fencingToken", "attempts", "startedAt", "createdAt", "modifiedAt")
  SELECT $1::text, $2, $3, $4, 'RUNNING', $5, $6, $7, $8,
     nextval(${nextFencingToken}), 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP
  WHERE NOT EXISTS (SELECT 1 FROM ${table} WHERE "lockKey" = $1)
  ON CONFLICT ("lockKey") DO NOTHING
  RETURNING t."id", t."fencingToken"::text AS "fencingToken", t."attempts", false AS "reclaimed", NULL::text AS "status"
),
reclaimed AS (
  UPDATE ${table} AS t SET
    "status" = 'RUNNING',
    "ownerToken" = $5,
    "name" = COALESCE($3, t."name"),
    "runKey" = $6,
    "leaseMs" = $7,
    "ownerId" = $8,
    "fencingToken" = nextval(${nextFencingToken}),
    "attempts" = t."attempts" + 1,
    "lastError" = CASE WHEN t."status" = 'FAIL' THEN t."data"
      ELSE jsonb_build_object('expired', true, 'ownerId', t."ownerId", 'lastHeartbeatAt', t."modifiedAt") END,
    "data" = NULL,
    "startedAt" = CURRENT_TIMESTAMP,
    "finishedAt" = NULL,
    "modifiedAt" = CURRENT_TIMESTAMP
  WHERE t."lockKey" = $1
    AND NOT EXISTS (SELECT 1 FROM inserted)
    AND (
      (t."status" = 'FAIL' AND $9::boolean)
      OR (t."status" = 'RUNNING'
          AND t."modifiedAt" < CURRENT_TIMESTAMP - COALESCE(t."leaseMs", $7) * INTERVAL '1 millisecond')
    )
  RETURNING t."id", t."fencingToken"::text AS "fencingToken", t."attempts", true AS "reclaimed", NULL::text AS "status"
)
SELECT * FROM inserted
UNION ALL
SELECT * FROM reclaimed
UNION ALL
SELECT NULL::uuid, NULL::text, NULL::integer, NULL::boolean, t."status"::text
FROM ${table} AS t
WHERE t."lockKey" = $1 AND NOT EXISTS (SELECT 1 FROM inserted) AND NOT EXISTS (SELECT 1 FROM reclaimed)`.trim();
};
