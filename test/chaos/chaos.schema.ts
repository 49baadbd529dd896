/**
 * The application tables of the chaos run, next to the lease table, and the two side effects a
 * run performs the way the README tells users to:
 *
 * - an outbox row keyed uniquely by the run's idempotency key (`INSERT ... ON CONFLICT DO
 *   NOTHING`): a second attempt of the same logical run finds the row and adds none;
 * - a fenced write into a resource (`UPDATE ... WHERE fence < $fencingToken`): a writer whose
 *   token is not newer than the last accepted one is refused.
 *
 * `chaos_fence_log` is instrumentation, not part of the pattern: every accepted fenced write
 * appends one row in the same statement, so the check can replay what the resource accepted.
 */

export const CHAOS_TABLES = `
CREATE TABLE chaos_effect (
  "id" bigserial PRIMARY KEY,
  "idempotencyKey" text NOT NULL,
  "resource" text NOT NULL,
  "fencingToken" bigint NOT NULL,
  "nodeId" text NOT NULL,
  "createdAt" timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT chaos_effect_idempotency_key UNIQUE ("idempotencyKey")
);
CREATE TABLE chaos_resource (
  "resource" text PRIMARY KEY,
  "fence" bigint NOT NULL DEFAULT 0,
  "writtenBy" text,
  "writes" integer NOT NULL DEFAULT 0
);
CREATE TABLE chaos_fence_log (
  "id" bigserial PRIMARY KEY,
  "resource" text NOT NULL,
  "fencingToken" bigint NOT NULL,
  "nodeId" text NOT NULL,
  "leaseToken" bigint,
  "at" timestamptz NOT NULL DEFAULT clock_timestamp()
);`;

/** One resource row per logical run, fence 0, before any worker starts. */
export const SEED_RESOURCES = `INSERT INTO chaos_resource ("resource") SELECT unnest($1::text[])`;

/** $1 idempotencyKey, $2 resource, $3 fencingToken, $4 nodeId. One row back when inserted. */
export const INSERT_EFFECT = `
INSERT INTO chaos_effect ("idempotencyKey", "resource", "fencingToken", "nodeId")
VALUES ($1, $2, $3, $4)
ON CONFLICT ("idempotencyKey") DO NOTHING
RETURNING "id"`;

/**
 * $1 resource, $2 fencingToken, $3 nodeId, $4 idempotencyKey. The write itself is the UPDATE;
 * the log row records the token the lease table held at that moment (instrumentation only).
 */
export const FENCED_WRITE = `
WITH written AS (
  UPDATE chaos_resource SET "fence" = $2, "writtenBy" = $3, "writes" = "writes" + 1
  WHERE "resource" = $1 AND "fence" < $2
  RETURNING "resource", "fence"
)
INSERT INTO chaos_fence_log ("resource", "fencingToken", "nodeId", "leaseToken")
SELECT "resource", "fence", $3,
  (SELECT "fencingToken" FROM "job-scheduler" WHERE "lockKey" = $4)
FROM written
RETURNING "id"`;

/**
 * Every run that has a row, and whether a worker should try to take it over: FAIL, or RUNNING
 * with a lease expired by the database clock. The acquire decides; this only spares asking about
 * every run on every sweep. Ticks without a row are those nobody could start (database down).
 */
export const SWEEP_RUNS = `
SELECT "code", "runKey",
  ("status" = 'FAIL'
   OR ("status" = 'RUNNING' AND "modifiedAt" < CURRENT_TIMESTAMP - "leaseMs" * INTERVAL '1 millisecond')) AS "takeover"
FROM "job-scheduler"`;
