// Longer than ~350 lines on purpose: every statement of the lease that decides who holds a run is audited in this one file, its concurrency argument beside it (the scheduler's take-over claim, which knows its runKeys and policies, is in lease-take-over.sql.ts, its argument beside it).
import type { JobLeaseDatabaseOperation } from './job-scheduler.errors';

/**
 * The statements that decide who holds a run, as pure builders of `{ text, values }`: acquire,
 * the batch claim, heartbeat, complete / fail (one, many, again), expire (a hand-over), and an
 * operator's release of a stuck lease. Anyone auditing exclusion reads this file and
 * lease-take-over.sql.ts (the scheduler's claim of abandoned occurrences, and their ending): the
 * argument for why two holders can never both win stands beside each statement. Each operation is one statement, atomic in PostgreSQL
 * and judged by the database clock (CURRENT_TIMESTAMP), so node clocks never matter. Everything a
 * caller supplies travels as a parameter. The operators' reads and deletes (prune, inspection,
 * the replication reading) are in operations/operations.sql.ts; the scheduler's history and the
 * dashboard's reads of occurrences in operations/occurrence-history.sql.ts.
 */

/** An owner token among a statement's values, or an array of them (null where a run has none). */
export type LeaseSecret = string | readonly (string | null)[];

export interface SqlStatement {
  text: string;
  values: unknown[];
  /** What the statement does, for errors and timeouts. */
  operation: JobLeaseDatabaseOperation;
  /** The owner token among `values` (or the array of them), if any: redacted from logs and errors. */
  secret?: LeaseSecret;
  /**
   * The same statement as a call of the server-side function that holds it (installed by a
   * migration), taking the same values. PostgreSQL keeps the function's plan per server session,
   * so the executor sends this instead when it sends unnamed statements.
   */
  viaFunction?: string;
  /**
   * Never sent as a named prepared statement: the server plans it for its values every time. For
   * a rare statement whose best plan depends on a value (a cached generic plan cannot see it).
   */
  planEachTime?: true;
  /**
   * The same statement for a database without the expiry table (before the migration
   * TrackJobSchedulerLeaseExpiries1764547200010): it reads the RUNNING rows of the job-scheduler
   * table itself. The executor sends it once the server reports the table missing (42P01).
   */
  withoutExpiryTable?: string;
}

export interface AcquireParameters {
  lockKey: string;
  code: string;
  name: string | null;
  type: string;
  ownerToken: string;
  runKey: string | null;
  leaseMs: number;
  ownerId: string;
  reclaimFailed: boolean;
}

/**
 * Acquired: the run's id, fencing token, attempts, and whether it was reclaimed. Not acquired:
 * id null and the status the loser saw (null when a concurrent insert is not visible yet).
 */
export interface AcquireRow {
  id: string | null;
  fencingToken: string | null;
  attempts: number | null;
  reclaimed: boolean | null;
  status: string | null;
}

/**
 * One claim of several runs in one statement: the scheduler's tenants of one occurrence, or the
 * jobs due at one instant. Per run (same index in every array): lock key (distinct), runKey, code,
 * name, lease, owner token; shared: type, owner id, whether FAIL rows are reclaimed, again.
 */
export interface AcquireBatchParameters {
  lockKeys: string[];
  runKeys: string[];
  codes: string[];
  names: Array<string | null>;
  leaseMs: number[];
  type: string;
  ownerId: string;
  reclaimFailed: boolean;
  /** Per run: the owner token it gets if won (the caller's, a UUID), or null (drawn by the database); null: all drawn. */
  ownerTokens: Array<string | null> | null;
  /** A retry of a claim whose answer was lost: a run RUNNING under the token named is returned as won. */
  again: boolean;
  /** The runs won are announced (NOTIFY on the table's channel, see claim-announcements.ts). */
  announce: boolean;
}

/**
 * One row per lock key of the batch. Won: id, its owner token (the caller's or drawn), fencing token,
 * attempts, reclaimed. Lost: id null and the status the loser saw (null when not visible yet).
 */
export interface AcquireBatchRow {
  lockKey: string;
  id: string | null;
  ownerToken: string | null;
  fencingToken: string | null;
  attempts: number | null;
  reclaimed: boolean | null;
  status: string | null;
}

/** The mark expireMany leaves in a row's data: its owner gave it up before starting it. */
export const HANDED_OVER = `'{"handedOver": true}'::jsonb`;

/**
 * Whether a RUNNING row's lease ran out by the database clock (a row without a lease: after
 * `fallback` ms). The first term is the instant the lease runs out, a row without a lease counting
 * from its "modifiedAt" (the expression of the expiry table's entries, and of the index
 * IDX_job_scheduler_running_expiry on a database before migration 0010); the second decides.
 */
export const leaseRanOut = (alias: string, fallback: string): string =>
  `((${alias}"modifiedAt" AT TIME ZONE 'UTC') + COALESCE(${alias}"leaseMs", 0) * INTERVAL '1 millisecond') < (CURRENT_TIMESTAMP AT TIME ZONE 'UTC')
    AND ${alias}"modifiedAt" < CURRENT_TIMESTAMP - COALESCE(${alias}"leaseMs", ${fallback}) * INTERVAL '1 millisecond'`;

/**
 * The rows whose lease may have run out: those with an entry in the expiry table (migration 0010)
 * that is past, found on its index. The table's triggers give every RUNNING row an entry at or
 * before its lease's expiry, so no RUNNING row past its lease is left out; the caller checks each
 * row found (RUNNING, leaseRanOut). By id on the primary key, from an array computed first:
 * linear in the entries past whatever the planner estimates.
 */
export const expiryListed = (alias: string, expiryTable: string): string =>
  `${alias}"id" = ANY (ARRAY(SELECT e."leaseId" FROM ${expiryTable} AS e WHERE e."expiresAt" < (CURRENT_TIMESTAMP AT TIME ZONE 'UTC')))`;

/** A statement's text for the expiry table, and the same without it (`withoutExpiryTable`). */
export const expiryTexts = (build: (listed: (alias: string) => string) => string, expiryTable: string) => ({
  text: build(
    (alias) => `${expiryListed(alias, expiryTable)}
    AND `,
  ),
  withoutExpiryTable: build(() => ''),
});

/**
 * Lock keys per NOTIFY payload of an announced claim: a lock key is 46 characters (`v2:` and a
 * SHA-256 in base64url), so 150 and their separators take 7,050 of the 8,000 bytes a payload may hold.
 */
export const ANNOUNCED_KEYS_PER_NOTIFY = 150;

/**
 * The SQL expression naming the channel a lease table's claims are announced on: `job_claims_`
 * and the table's oid, as `table` (a qualified or search_path-relative name) resolves where the
 * expression runs. Two tables named alike in different schemas, or on different search paths,
 * never share a channel: a run announced on one table must never be skipped on another.
 */
export const announcementChannelOf = (table: string): string => `'job_claims_' || ('${table.replace(/'/g, "''")}'::regclass::oid)::text`;

export const quoteIdentifier = (identifier: string): string => `"${identifier.replace(/"/g, '""')}"`;

/** `"schema"."table"` or `"table"` (resolved through search_path). */
export const qualifiedTableName = (tableName: string, schema?: string): string =>
  schema ? `${quoteIdentifier(schema)}.${quoteIdentifier(tableName)}` : quoteIdentifier(tableName);

/** The statements that decide who holds a run: each fenced, each one round trip. */
export interface LeaseStatements {
  acquire(parameters: AcquireParameters): SqlStatement;
  acquireBatch(parameters: AcquireBatchParameters): SqlStatement;
  heartbeat(id: string, ownerToken: string): SqlStatement;
  /** heartbeat for many leases of this node at once (each fenced on its own id and token): rows `{ id }` of those still held. */
  heartbeatMany(ids: readonly string[], ownerTokens: readonly string[]): SqlStatement;
  complete(id: string, ownerToken: string, data: string | null): SqlStatement;
  fail(id: string, ownerToken: string, data: string | null): SqlStatement;
  /**
   * complete or fail for many leases of this node at once (each fenced on its own id and token),
   * each with its own data (JSON text or null, one per id): rows `{ id }` of those that applied.
   */
  finalizeMany(
    status: 'SUCCESS' | 'FAIL',
    ids: readonly string[],
    ownerTokens: readonly string[],
    data: readonly (string | null)[],
    again?: boolean,
  ): SqlStatement;
  /**
   * Ends the leases of these owned RUNNING rows now, leaving them RUNNING (for a take-over elsewhere).
   * `announce`: their lock keys are announced released (a payload of `-` and the keys), so that the
   * instances that heard them won claim them again (see claim-announcements.ts).
   */
  expireMany(ids: readonly string[], ownerTokens: readonly string[], fallbackLeaseMs: number, announce?: boolean): SqlStatement;
  /** complete, also "applied" when this owner already completed the run (a retry whose first reply was lost). */
  completeAgain(id: string, ownerToken: string, data: string | null): SqlStatement;
  /** fail, also "applied" when this owner already failed the run. */
  failAgain(id: string, ownerToken: string, data: string | null): SqlStatement;
  /** An operator frees a stuck lease: FAIL, if still RUNNING with that fencing token. */
  releaseStuckLease(id: string, fencingToken: string, data: string): SqlStatement;
}

/**
 * `SELECT * FROM <function>($1, ..., $n)`: a call of a function that runs one of the statements
 * below, installed by a migration (the acquire function: AddJobSchedulerAcquireFunction).
 */
const functionCall = (functionName: string, parameterCount: number): string =>
  `SELECT * FROM ${functionName}(${Array.from({ length: parameterCount }, (_, index) => `$${index + 1}`).join(', ')})`;

/**
 * Builds the lease statements for one table. The texts are computed once; each call only binds values.
 *
 * Acquire: insert a fresh row, or reclaim a FAIL / expired RUNNING row, in one statement.
 *
 * - `inserted` is `INSERT ... SELECT ... WHERE NOT EXISTS ... ON CONFLICT DO NOTHING`: when the
 *   row exists, the guard produces no tuple, so a loser writes nothing, locks nothing and draws no
 *   fencing token; first inserters racing past the guard meet in the unique index, and ON CONFLICT
 *   turns all but one away. One that passed ON CONFLICT's own pre-check before the winner's entry
 *   was there has already written its tuple and index entries speculatively, and removes them: WAL,
 *   a transaction id and a fencing token value, never a row or a lease (the peers bench at 32
 *   nodes armed to the same millisecond: 8 transactions and 5,872 B of WAL for one instant,
 *   against 1,269 B unraced). The scheduler staggers its instances' claims ahead so that they
 *   rarely race so (see MAX_CLAIM_STAGGER_MS: 1,270 B and 2 transactions at 32 nodes).
 * - `reclaimed` is an `UPDATE` whose WHERE only matches a row that may be taken over: FAIL (when
 *   allowed) or RUNNING whose last owner write is older than the lease stored on the row (the
 *   caller's lease for rows written by 1.1, which stored none), by the database clock. A row
 *   that does not match is neither locked nor written, so a loser again costs no lock and no WAL.
 *   SUCCESS never matches.
 *
 * Why both parts can never act in one statement: they share one snapshot, and the UPDATE runs
 * only when `inserted` returned nothing (`NOT EXISTS (SELECT 1 FROM inserted)`). If the INSERT
 * wrote a row, the UPDATE is skipped; if it did not, a conflicting row exists and only the UPDATE
 * can take it.
 *
 * The last branch only reads (no lock): for a loser, the status it lost to, for metrics.
 *
 * Fencing tokens come from one sequence (`<table>_fencingToken_seq`), on insert and on every
 * reclaim: a token is greater than every token drawn before it, so a run's tokens strictly
 * increase across reclaims, and also across prune and retention (a deleted row's successor draws
 * a newer value). Its one limit: asynchronous replication can lose the latest values in a
 * failover, as it can lose the rows themselves.
 *
 * Why two reclaimers can never both win: an UPDATE that finds its row being changed by another
 * transaction waits for it, then (READ COMMITTED) re-evaluates the WHERE on the new version. The
 * winner made it RUNNING with a fresh modifiedAt, so the re-check fails and the loser returns no
 * row. Under REPEATABLE READ or SERIALIZABLE the loser gets a serialization failure instead,
 * which the service maps to "not acquired".
 */
export const createLeaseStatements = (
  table: string,
  fencingTokenSequence: string,
  /** The table of lease expiries (see 1764547200010-TrackJobSchedulerLeaseExpiries). */
  expiryTable: string,
  /** The function holding the acquire statement (see 1764547200005-AddJobSchedulerAcquireFunction), if any. */
  acquireFunction?: string,
): LeaseStatements => {
  const nextFencingToken = `'${fencingTokenSequence.replace(/'/g, "''")}'`;
  // What every reclaim writes besides its new owner: a fresh fencing token, one more attempt, why
  // the previous owner lost the run, and new timestamps (acquire and the batch claim share it).
  const reclaimBookkeeping = `"fencingToken" = nextval(${nextFencingToken}),
    "attempts" = t."attempts" + 1,
    "lastError" = CASE WHEN t."status" = 'FAIL' THEN t."data"
      ELSE jsonb_build_object('expired', true, 'ownerId', t."ownerId", 'lastHeartbeatAt', t."modifiedAt") END,
    "data" = NULL,
    "startedAt" = CURRENT_TIMESTAMP,
    "finishedAt" = NULL,
    "modifiedAt" = CURRENT_TIMESTAMP`;
  const acquireText = `
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
    ${reclaimBookkeeping}
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

  const acquireViaFunction = acquireFunction === undefined ? undefined : functionCall(acquireFunction, 9);

  // Acquire for several keys at once (each with its own code, name and lease), each key by the rules above: insert-or-nothing,
  // else reclaim (FAIL when allowed, RUNNING past its lease by the database clock), else a read
  // of the status lost to. Differences, all for batches:
  // - A run's owner token is the caller's when it names one ($9, redacted like every token), else
  //   drawn by the database (gen_random_uuid) for the winning rows only; either way it is returned.
  // - A key is inserted only if no row is visible in the statement's snapshot and reclaimed only
  //   if one is: one key can never be both. Rows are inserted and locked in lockKey order, so two
  //   batches that overlap wait on each other in one direction only (no deadlock).
  // - Reclaimable rows are locked with SKIP LOCKED: a row another instance is reclaiming (or
  //   heartbeating) right now is lost, not waited for. The WHERE is re-checked on the version
  //   locked, so a row reclaimed meanwhile is not taken twice.
  //
  // `again` (a retry of a claim whose answer was lost: the statement can commit after its caller
  // gave up on it) also returns, as won, each key whose row is RUNNING under the owner token the
  // caller names, with its lease renewed (modifiedAt: the caller proves it from the retry's send):
  // same id, fencing token and attempts. That lost claim won the run, and only the holder of its
  // token can name it, so no other owner is ever handed a run. Two paths, disjoint by the snapshot:
  // - `mine`: the row is visible (the lost claim committed before this statement began): a fenced
  //   UPDATE, as a heartbeat is (a row reclaimed meanwhile has another token and does not match).
  // - the insert's ON CONFLICT: the row is not visible yet (the lost claim is still in flight or
  //   committed after the snapshot). The conflict waits for that insert's transaction, then
  //   DO UPDATE locks the committed row and applies only if its token is the caller's; otherwise
  //   it writes nothing and the key is lost. (Unlike DO NOTHING, it locks the row it conflicts
  //   with: a cost only retries pay.)
  // A reclaim by the lost claim still in flight when the retry runs is not seen (its row is
  // locked and skipped): the key is lost, and the take-over scan runs it once its lease runs out.
  // Announced: the lock keys won are sent with NOTIFY on the table's channel (named after its oid,
  // resolved as the statement resolves the table: see announcementChannelOf), at most
  // ANNOUNCED_KEYS_PER_NOTIFY to a payload (a payload stays under PostgreSQL's 8,000 bytes), delivered
  // to the listeners when the statement commits: never for a claim rolled back. A scalar subquery
  // over the CTE makes it run (a CTE nothing reads is not run); NOTIFY writes no WAL.
  const acquireBatchText = (again: boolean, announce: boolean): string => {
    const mine = `
mine AS (
  UPDATE ${table} AS t SET "modifiedAt" = CURRENT_TIMESTAMP
  FROM candidate AS c
  WHERE t."lockKey" = c."lockKey" AND t."ownerToken" = c."ownerToken" AND t."status" = 'RUNNING'
  RETURNING t."lockKey", t."id", t."ownerToken"::text AS "ownerToken", t."fencingToken"::text AS "fencingToken", t."attempts", t."attempts" > 1 AS "reclaimed"
),`;
    const onConflict = again
      ? `DO UPDATE SET "modifiedAt" = CURRENT_TIMESTAMP
    WHERE t."ownerToken" = EXCLUDED."ownerToken" AND t."status" = 'RUNNING'`
      : 'DO NOTHING';
    // A row that is the caller's own is for `mine`, never reclaimed from itself.
    const notMine = `
    AND NOT (t."status" = 'RUNNING' AND t."ownerToken" IS NOT DISTINCT FROM c."ownerToken")`;
    return `
WITH candidate AS (
  SELECT k."lockKey", k."runKey", k."code", k."name", k."leaseMs", k."ownerToken"
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $9::uuid[]) AS k("lockKey", "runKey", "code", "name", "leaseMs", "ownerToken")
),${again ? mine : ''}
inserted AS (
  INSERT INTO ${table} AS t
    ("lockKey", "code", "name", "type", "status", "ownerToken", "runKey", "leaseMs", "ownerId",
     "fencingToken", "attempts", "startedAt", "createdAt", "modifiedAt")
  SELECT c."lockKey", c."code", c."name", $6, 'RUNNING', COALESCE(c."ownerToken", gen_random_uuid()), c."runKey", c."leaseMs", $7,
     nextval(${nextFencingToken}), 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP
  FROM candidate AS c
  WHERE NOT EXISTS (SELECT 1 FROM ${table} WHERE "lockKey" = c."lockKey")
  ORDER BY c."lockKey"
  ON CONFLICT ("lockKey") ${onConflict}
  RETURNING t."lockKey", t."id", t."ownerToken"::text AS "ownerToken", t."fencingToken"::text AS "fencingToken", t."attempts", t."attempts" > 1 AS "reclaimed"
),
reclaimable AS (
  SELECT t."id", c."runKey", c."name", c."leaseMs", c."ownerToken" FROM ${table} AS t JOIN candidate AS c ON c."lockKey" = t."lockKey"
  WHERE ((t."status" = 'FAIL' AND $8::boolean)
     OR (t."status" = 'RUNNING'
         AND t."modifiedAt" < CURRENT_TIMESTAMP - COALESCE(t."leaseMs", c."leaseMs") * INTERVAL '1 millisecond'))${again ? notMine : ''}
  ORDER BY t."lockKey"
  FOR UPDATE OF t SKIP LOCKED
),
reclaimed AS (
  UPDATE ${table} AS t SET
    "status" = 'RUNNING',
    "ownerToken" = COALESCE(r."ownerToken", gen_random_uuid()),
    "name" = COALESCE(r."name", t."name"),
    "runKey" = r."runKey",
    "leaseMs" = r."leaseMs",
    "ownerId" = $7,
    ${reclaimBookkeeping}
  FROM reclaimable AS r
  WHERE t."id" = r."id"
  RETURNING t."lockKey", t."id", t."ownerToken"::text AS "ownerToken", t."fencingToken"::text AS "fencingToken", t."attempts", true AS "reclaimed"
),
won AS (SELECT * FROM inserted UNION ALL SELECT * FROM reclaimed${again ? ' UNION ALL SELECT * FROM mine' : ''})${announce ? announced : ''}
SELECT c."lockKey", w."id", w."ownerToken", w."fencingToken", w."attempts", w."reclaimed",
  CASE WHEN w."id" IS NULL THEN (SELECT s."status"::text FROM ${table} AS s WHERE s."lockKey" = c."lockKey") END AS "status"${
    announce ? `,\n  (SELECT count(*) FROM announced) AS "announced"` : ''
  }
FROM candidate AS c LEFT JOIN won AS w ON w."lockKey" = c."lockKey"`.trim();
  };
  // The CTE that announces the lock keys of `rows` (a CTE with a "lockKey" column), each payload
  // `prefix` and up to ANNOUNCED_KEYS_PER_NOTIFY keys: won ('') or handed over ('-').
  const announcedOf = (rows: string, prefix: string): string => `
announced AS (
  SELECT pg_notify(${announcementChannelOf(table)}, ${prefix ? `'${prefix}' || ` : ''}string_agg(a."lockKey", ' ')) FROM (SELECT "lockKey", (row_number() OVER ()) / ${ANNOUNCED_KEYS_PER_NOTIFY} AS part FROM ${rows}) AS a
  GROUP BY a.part
)`;
  const announced = `,${announcedOf('won', '')}`;
  const acquireBatchTexts = [
    [acquireBatchText(false, false), acquireBatchText(false, true)],
    [acquireBatchText(true, false), acquireBatchText(true, true)],
  ] as const;

  const heartbeatText = `
UPDATE ${table} SET "modifiedAt" = CURRENT_TIMESTAMP
WHERE "id" = $1 AND "ownerToken" = $2 AND "status" = 'RUNNING'
RETURNING "id"`.trim();

  const finalizeText = (status: 'SUCCESS' | 'FAIL'): string =>
    `
UPDATE ${table} SET "status" = '${status}', "data" = $3::jsonb,
  "finishedAt" = CURRENT_TIMESTAMP, "modifiedAt" = CURRENT_TIMESTAMP
WHERE "id" = $1 AND "ownerToken" = $2 AND "status" = 'RUNNING'
RETURNING "id"`.trim();
  const completeText = finalizeText('SUCCESS');
  const failText = finalizeText('FAIL');
  // An update of many leases at once ($1 ids, $2 owner tokens), each row fenced on its own id and
  // token and required RUNNING: the ids it applied to.
  const ownedManyText = (assignments: string, returning = 't."id"'): string =>
    `
UPDATE ${table} AS t SET ${assignments}
FROM unnest($1::uuid[], $2::uuid[]) AS given("id", "ownerToken")
WHERE t."id" = given."id" AND t."ownerToken" = given."ownerToken" AND t."status" = 'RUNNING'
RETURNING ${returning}`.trim();
  // complete / fail for many leases (a scheduler completing the runs that ended together, or
  // giving back the occurrences it claimed ahead), each row with its own data ($3, JSON text or
  // NULL beside its id and token: the scheduler records each run's handlerMs), each fenced as above.
  // `again`, a retry of such a statement whose reply was lost: a row already in that status under
  // the same owner token counts as applied and keeps its data and times (as finalizeAgainText).
  const finalizeManyText = (status: 'SUCCESS' | 'FAIL', again: boolean): string =>
    (again
      ? `
UPDATE ${table} AS t SET "status" = '${status}',
  "data" = CASE WHEN t."status" = 'RUNNING' THEN given."data"::jsonb ELSE t."data" END,
  "finishedAt" = CASE WHEN t."status" = 'RUNNING' THEN CURRENT_TIMESTAMP ELSE t."finishedAt" END,
  "modifiedAt" = CASE WHEN t."status" = 'RUNNING' THEN CURRENT_TIMESTAMP ELSE t."modifiedAt" END
FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS given("id", "ownerToken", "data")
WHERE t."id" = given."id" AND t."ownerToken" = given."ownerToken" AND t."status" IN ('RUNNING', '${status}')
RETURNING t."id"`
      : `
UPDATE ${table} AS t SET "status" = '${status}', "data" = given."data"::jsonb,
  "finishedAt" = CURRENT_TIMESTAMP, "modifiedAt" = CURRENT_TIMESTAMP
FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS given("id", "ownerToken", "data")
WHERE t."id" = given."id" AND t."ownerToken" = given."ownerToken" AND t."status" = 'RUNNING'
RETURNING t."id"`
    ).trim();
  const finalizeManyTexts = {
    SUCCESS: [finalizeManyText('SUCCESS', false), finalizeManyText('SUCCESS', true)],
    FAIL: [finalizeManyText('FAIL', false), finalizeManyText('FAIL', true)],
  } as const;
  // Gives leases up unfinished: each row stays RUNNING with its lease run out (by the database
  // clock, as a crashed holder's would be), so that any instance's take-over scan or acquire may
  // reclaim it (fencing token + 1). The row says so (data { handedOver: true }): its owner did not
  // start it, so the take-over runs it whatever the job's limits on crashed runs.
  const heartbeatManyText = ownedManyText(`"modifiedAt" = CURRENT_TIMESTAMP`);
  const expireAssignments = `"modifiedAt" = CURRENT_TIMESTAMP - (COALESCE(t."leaseMs", $3::integer) + 1) * INTERVAL '1 millisecond',
  "data" = ${HANDED_OVER}`;
  const expireManyText = ownedManyText(expireAssignments);
  // Announced: the rows handed over are announced released as the claim announces them won.
  const expireManyAnnouncedText = `
WITH expired AS (
${ownedManyText(expireAssignments, 't."id", t."lockKey"')}
),${announcedOf('expired', '-')}
SELECT e."id", (SELECT count(*) FROM announced) AS "announced" FROM expired AS e`.trim();

  // A retry of complete / fail whose first attempt may have committed with its reply lost: also
  // applied when the row already holds that status under this owner token (nobody else can have
  // written it: the token is this owner's secret, and a reclaim rotates it). One UPDATE accepts
  // both states, so that a retry that waits on the first attempt's row lock re-checks the
  // committed version (READ COMMITTED) and still matches it; an already final row keeps its data
  // and times.
  const finalizeAgainText = (status: 'SUCCESS' | 'FAIL'): string =>
    `
UPDATE ${table} SET "status" = '${status}',
  "data" = CASE WHEN "status" = 'RUNNING' THEN $3::jsonb ELSE "data" END,
  "finishedAt" = CASE WHEN "status" = 'RUNNING' THEN CURRENT_TIMESTAMP ELSE "finishedAt" END,
  "modifiedAt" = CASE WHEN "status" = 'RUNNING' THEN CURRENT_TIMESTAMP ELSE "modifiedAt" END
WHERE "id" = $1 AND "ownerToken" = $2 AND "status" IN ('RUNNING', '${status}')
RETURNING "id"`.trim();
  const completeAgainText = finalizeAgainText('SUCCESS');
  const failAgainText = finalizeAgainText('FAIL');

  // Fenced on the id AND the fencing token the operator saw: a lease reclaimed meanwhile (a new
  // token) or finished is left alone. The owner token is cleared, so the holder, should it still
  // be alive, loses the lease at its next heartbeat and cannot finalize the run.
  const releaseStuckLeaseText = `
UPDATE ${table} SET "status" = 'FAIL', "ownerToken" = NULL, "data" = $3::jsonb,
  "lastError" = jsonb_build_object('released', true, 'ownerId', "ownerId", 'lastHeartbeatAt', "modifiedAt"),
  "finishedAt" = CURRENT_TIMESTAMP, "modifiedAt" = CURRENT_TIMESTAMP
WHERE "id" = $1::uuid AND "fencingToken" = $2::bigint AND "status" = 'RUNNING'
RETURNING "id"`.trim();

  return {
    acquire: (p) => ({
      text: acquireText,
      values: [p.lockKey, p.code, p.name, p.type, p.ownerToken, p.runKey, p.leaseMs, p.ownerId, p.reclaimFailed],
      operation: 'acquire',
      secret: p.ownerToken,
      ...(acquireViaFunction === undefined ? {} : { viaFunction: acquireViaFunction }),
    }),
    acquireBatch: (p) => ({
      text: acquireBatchTexts[p.again ? 1 : 0][p.announce ? 1 : 0],
      values: [p.lockKeys, p.runKeys, p.codes, p.names, p.leaseMs, p.type, p.ownerId, p.reclaimFailed, p.ownerTokens],
      operation: 'acquire',
      ...(p.ownerTokens ? { secret: p.ownerTokens } : {}),
    }),
    heartbeat: (id, ownerToken) => ({ text: heartbeatText, values: [id, ownerToken], operation: 'heartbeat', secret: ownerToken }),
    heartbeatMany: (ids, ownerTokens) => ({ text: heartbeatManyText, values: [ids, ownerTokens], operation: 'heartbeat', secret: ownerTokens }),
    complete: (id, ownerToken, data) => ({ text: completeText, values: [id, ownerToken, data], operation: 'complete', secret: ownerToken }),
    fail: (id, ownerToken, data) => ({ text: failText, values: [id, ownerToken, data], operation: 'fail', secret: ownerToken }),
    finalizeMany: (status, ids, ownerTokens, data, again = false) => ({
      text: finalizeManyTexts[status][again ? 1 : 0],
      values: [ids, ownerTokens, data],
      operation: status === 'SUCCESS' ? 'complete' : 'fail',
      secret: ownerTokens,
    }),
    expireMany: (ids, ownerTokens, fallbackLeaseMs, announce = false) => ({
      text: announce ? expireManyAnnouncedText : expireManyText,
      values: [ids, ownerTokens, fallbackLeaseMs],
      operation: 'fail',
      secret: ownerTokens,
    }),
    completeAgain: (id, ownerToken, data) => ({ text: completeAgainText, values: [id, ownerToken, data], operation: 'complete', secret: ownerToken }),
    failAgain: (id, ownerToken, data) => ({ text: failAgainText, values: [id, ownerToken, data], operation: 'fail', secret: ownerToken }),
    releaseStuckLease: (id, fencingToken, data) => ({ text: releaseStuckLeaseText, values: [id, fencingToken, data], operation: 'release' }),
  };
};
