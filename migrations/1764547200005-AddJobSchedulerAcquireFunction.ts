import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

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

/**
 * Installs `"job-scheduler_acquire"`, the lease's acquire statement inside a PL/pgSQL function,
 * for unnamed statements (`preparedStatements: false`, the PgBouncer setting). PL/pgSQL plans
 * the statement once per server session and keeps the plan, so behind a pooler, where named
 * prepared statements cannot be used, acquire still skips parsing and planning its large
 * statement: the client sends a small unnamed `SELECT * FROM "job-scheduler_acquire"($1..$9)`.
 * Nothing lives on the client's session, so it works in transaction pooling.
 *
 * The function is one statement (insert or reclaim, atomic, judged by the database clock): the
 * semantics, locks and WAL are the statement's. SECURITY INVOKER (the default): it runs with
 * the caller's privileges on the table and sequence; EXECUTE is granted to PUBLIC as for every
 * new function (where default privileges revoke it, grant EXECUTE to the application's role).
 * Until this migration runs, the lease sends the statement itself.
 */
export class AddJobSchedulerAcquireFunction1764547200005 implements MigrationInterface {
  name = 'AddJobSchedulerAcquireFunction1764547200005';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table, typeEnum, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    const statement = acquireFunctionStatement(table, `${schemaPrefix}"job-scheduler_fencingToken_seq"`);
    await queryRunner.query(`
CREATE OR REPLACE FUNCTION ${acquireFunctionSignature(`${schemaPrefix}"job-scheduler_acquire"`, typeEnum)}
RETURNS TABLE ("id" uuid, "fencingToken" text, "attempts" integer, "reclaimed" boolean, "status" text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER AS $function$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${statement};
END
$function$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { typeEnum, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`DROP FUNCTION IF EXISTS ${acquireFunctionSignature(`${schemaPrefix}"job-scheduler_acquire"`, typeEnum)}`);
  }
}
