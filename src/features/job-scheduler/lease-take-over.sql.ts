/**
 * The scheduler's take-over of abandoned occurrences, as pure builders of `{ text, values }`: the
 * claim of a batch (it decides who holds a run, like the lease's acquire: its argument is beside
 * it), the read of the keys that have some, and the ending of those not to be run again. Apart
 * from job-scheduler.sql.ts because they know the scheduler's runKeys (an instant, a dynamic
 * schedule's `schedule=<id> ` prefix, a tenant) and its policies (maxAttempts, drop, lateMs);
 * lease-take-over.ts builds their parameters and reads their rows.
 */
import { expiryTexts, HANDED_OVER, leaseRanOut, type SqlStatement } from './job-scheduler.sql';

/**
 * The take-over scan's claim: the occurrences of these keys RUNNING past their lease. A key (same
 * index in every array) is a code and the runKey prefix of its occurrences ('' for a declared
 * job's, `schedule=<id> ` for a dynamic schedule's), with what to do with them.
 */
export interface TakeOverParameters {
  codes: string[];
  prefixes: string[];
  /** The lease a claim runs with (null: the row's). */
  leaseMs: Array<number | null>;
  /** Owners an occurrence may have in all; one that had them is ended, unless it was handed over. */
  maxAttempts: number[];
  /** `abandoned: 'drop'`: ended unrun, unless it was handed over. */
  drop: boolean[];
  /** Found more than this after its lease ran out: ended as late (null: never). */
  lateMs: Array<number | null>;
  /** false: nothing of this key is claimed now (its job is running here); it may still be ended. */
  claimable: boolean[];
  fallbackLeaseMs: number;
  /** Only occurrences due at or before this instant (ISO 8601, the scheduler's clock). */
  dueBy: string;
  /** The most rows claimed, and the most rows (and unknown keys) reported to end. */
  limit: number;
  ownerId: string;
}

/**
 * One row of the take-over claim. `claimed`: reclaimed for this instance (owner token drawn by
 * the database, fencing token + 1, attempts + 1). `end`: to be ended unrun for `reason`
 * ('drop' | 'attempts' | 'late'), not claimed. `unknown`: a code and runKey prefix (in runKey)
 * of expired occurrences that no key names (a dynamic schedule not known here), not claimed.
 */
export interface TakeOverRow {
  kind: 'claimed' | 'end' | 'unknown';
  id: string | null;
  code: string;
  runKey: string;
  lockKey: string | null;
  ownerToken: string | null;
  fencingToken: string | null;
  /** claimed: its attempts now (this owner included); end: the attempts seen. */
  attempts: number | null;
  leaseMs: number | null;
  /** Whether its last owner handed it over unstarted (`expireMany`), rather than vanished. */
  handedOver: boolean | null;
  /** How long ago its lease ran out, by the database clock (bigint as text). */
  expiredForMs: string | null;
  reason: string | null;
}

/** The statements of the scheduler's take-over of abandoned occurrences (see lease-take-over.ts). */
export interface TakeOverStatements {
  /** Claims a batch of the scheduler's abandoned occurrences for this instance; reports those to end (TakeOverRow). */
  takeOverAbandoned(parameters: TakeOverParameters): SqlStatement;
  /**
   * Of these codes, the (code, runKey prefix) pairs that have occurrences RUNNING past their
   * lease and due by `dueBy` (ISO 8601), up to `limit`: rows `{ code, prefix }`. Read only.
   */
  abandonedKeys(codes: readonly string[], fallbackLeaseMs: number, dueBy: string, limit: number): SqlStatement;
  /** Ends abandoned occurrences FAIL, each if still RUNNING past its lease with the attempts and hand-over mark seen: rows `{ id }`. */
  abandonOccurrences(
    ids: readonly string[],
    attempts: readonly number[],
    handedOver: readonly boolean[],
    data: readonly string[],
    fallbackLeaseMs: number,
  ): SqlStatement;
  /** Ends FAIL every occurrence RUNNING past its lease of each (code, runKey prefix): rows `{ id, code, runKey }`. */
  abandonRunKeyRanges(codes: readonly string[], prefixes: readonly string[], data: readonly string[], fallbackLeaseMs: number): SqlStatement;
}

/** Builds the take-over statements for one table. The texts are computed once; each call only binds values. */
export const createTakeOverStatements = (
  table: string,
  fencingTokenSequence: string,
  /** The table of lease expiries (see 1764547200010-TrackJobSchedulerLeaseExpiries). */
  expiryTable: string,
): TakeOverStatements => {
  const nextFencingToken = `'${fencingTokenSequence.replace(/'/g, "''")}'`;

  // Take-over: one statement per batch claims the abandoned occurrences (RUNNING past their lease
  // by the database clock) of the keys this instance runs, and reports those it must end instead.
  // - Found from the expiry table (expiryListed: only the leases that ran out are read; before
  //   migration 0010, on the partial index IDX_job_scheduler_running_expiry), oldest lease first, due by the scheduler's clock ($9: an occurrence handed over before its instant
  //   waits for it). A row's key is its code and the prefix of its runKey (a dynamic schedule's
  //   `schedule=<id> `, else ''): a row of a key not given ('unknown') is never claimed here.
  // - What to do with each is decided at the row, from its key's policy: handed over (expireMany's
  //   mark: its owner never started it) → claimed whatever maxAttempts and 'drop' say; crashed →
  //   ended ('drop', or 'attempts' once it had maxAttempts owners); lease run out longer than
  //   the key's lateMs ago → ended ('late'); else claimed.
  // - Claimed like acquireBatch reclaims: one row per key per statement (the rest of a key waits
  //   for the next batch; a per-tenant occurrence's tenants, which run side by side, each count
  //   as a key of their own), locked FOR UPDATE SKIP LOCKED, so that instances scanning together take
  //   disjoint rows and none waits for another; the WHERE is re-checked on the version locked
  //   (still RUNNING past its lease), so a row reclaimed meanwhile is not taken twice. Owner
  //   tokens are drawn by the database and returned; fencing token + 1, attempts + 1; the lease
  //   is the key's (else the row's).
  // - Planned to stay linear whatever the estimates (the RUNNING rows' statistics are often
  //   stale): the rows are judged once (MATERIALIZED), and the rows to lock are found by id on the
  //   primary key, not by a join that a misestimate turns into a nested loop over the judgement.
  // - The rows to end and the unknown keys are only read (no lock): ended by abandonOccurrences /
  //   abandonRunKeyRanges, each fenced again.
  const expiredBy = (alias: string, fallback: string) => leaseRanOut(`${alias}.`, fallback);
  // The occurrences of these codes that are RUNNING past their lease and due by the instant given.
  const abandonedWhere = (
    listed: (alias: string) => string,
    codes: string,
    fallback: string,
    dueBy: string,
  ) => `${listed('t.')}t."status" = 'RUNNING' AND t."type" = 'SCHEDULE' AND t."code" = ANY(${codes}::text[])
    AND t."runKey" ~ '^([0-9]{4}-[0-9]{2}-[0-9]{2}T|schedule=)'
    AND ${expiredBy('t', `${fallback}::integer`)}
    AND substring(t."runKey" from '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{3}Z') COLLATE "C" <= ${dueBy}::text COLLATE "C"`;
  const takeOverAbandonedTexts = expiryTexts(
    (listed) =>
      `
WITH policy AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::boolean[], $6::bigint[], $7::boolean[])
    AS p("code", "prefix", "leaseMs", "maxAttempts", "drop", "lateMs", "claimable")
),
expired AS MATERIALIZED (
  SELECT t."id", t."code", t."runKey", t."attempts", t."modifiedAt",
    COALESCE(t."data" @> ${HANDED_OVER}, false) AS "handedOver",
    (EXTRACT(EPOCH FROM (CURRENT_TIMESTAMP - t."modifiedAt")) * 1000)::bigint - COALESCE(t."leaseMs", $8::integer) AS "expiredForMs",
    COALESCE(substring(t."runKey" from '^schedule=[^ ]+ '), '') AS "prefix"
  FROM ${table} AS t
  WHERE ${abandonedWhere(listed, '$1', '$8', '$9')}
),
judged AS (
  SELECT e.*, COALESCE(p."claimable", false) AS "claimable",
    CASE
      WHEN p."code" IS NULL THEN 'unknown'
      WHEN NOT e."handedOver" AND p."drop" THEN 'drop'
      WHEN NOT e."handedOver" AND e."attempts" >= p."maxAttempts" THEN 'attempts'
      WHEN p."lateMs" IS NOT NULL AND e."expiredForMs" > p."lateMs" THEN 'late'
    END AS "reason"
  FROM expired AS e LEFT JOIN policy AS p ON p."code" = e."code" AND p."prefix" = e."prefix"
),
candidate AS (
  SELECT j.*, row_number() OVER (
    PARTITION BY j."code", j."prefix", CASE WHEN j."runKey" LIKE '% tenant=%' THEN j."runKey" ELSE '' END
    ORDER BY j."modifiedAt", j."id") AS "rank"
  FROM judged AS j WHERE j."reason" IS NULL AND j."claimable"
),
locked AS (
  SELECT t."id", t."code", COALESCE(substring(t."runKey" from '^schedule=[^ ]+ '), '') AS "prefix",
    COALESCE(t."data" @> ${HANDED_OVER}, false) AS "handedOver",
    (EXTRACT(EPOCH FROM (CURRENT_TIMESTAMP - t."modifiedAt")) * 1000)::bigint - COALESCE(t."leaseMs", $8::integer) AS "expiredForMs"
  FROM ${table} AS t
  WHERE t."id" = ANY (ARRAY(SELECT c."id" FROM candidate AS c WHERE c."rank" = 1))
    AND t."status" = 'RUNNING' AND ${expiredBy('t', '$8::integer')}
  ORDER BY t."modifiedAt", t."id"
  LIMIT $10
  FOR UPDATE SKIP LOCKED
),
claimed AS (
  UPDATE ${table} AS t SET
    "ownerToken" = gen_random_uuid(),
    "leaseMs" = COALESCE(p."leaseMs", t."leaseMs", $8::integer),
    "ownerId" = $11,
    "fencingToken" = nextval(${nextFencingToken}),
    "attempts" = t."attempts" + 1,
    "lastError" = jsonb_build_object('expired', true, 'ownerId', t."ownerId", 'lastHeartbeatAt', t."modifiedAt")
      || CASE WHEN l."handedOver" THEN ${HANDED_OVER} ELSE '{}'::jsonb END,
    "data" = NULL,
    "startedAt" = CURRENT_TIMESTAMP,
    "finishedAt" = NULL,
    "modifiedAt" = CURRENT_TIMESTAMP
  FROM locked AS l LEFT JOIN policy AS p ON p."code" = l."code" AND p."prefix" = l."prefix"
  WHERE t."id" = l."id"
  RETURNING 'claimed'::text AS "kind", t."id", t."code", t."runKey", t."lockKey", t."ownerToken"::text AS "ownerToken",
    t."fencingToken"::text AS "fencingToken", t."attempts", t."leaseMs", l."handedOver", l."expiredForMs"::text AS "expiredForMs", NULL::text AS "reason"
)
SELECT * FROM claimed
UNION ALL
(SELECT 'end', j."id", j."code", j."runKey", NULL, NULL, NULL, j."attempts", NULL, j."handedOver", j."expiredForMs"::text, j."reason"
 FROM judged AS j WHERE j."reason" IN ('drop', 'attempts', 'late') ORDER BY j."modifiedAt", j."id" LIMIT $10)
UNION ALL
(SELECT 'unknown', NULL, j."code", j."prefix", NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'unknown'
 FROM judged AS j WHERE j."reason" = 'unknown' GROUP BY j."code", j."prefix" ORDER BY min(j."modifiedAt") LIMIT $10)`.trim(),
    expiryTable,
  );

  // What a take-over scan over many keys asks first (so that it sends only the keys found): the
  // keys of the abandoned occurrences, found from the expiry table like the claim's.
  const abandonedKeysTexts = expiryTexts(
    (listed) =>
      `
SELECT DISTINCT t."code", COALESCE(substring(t."runKey" from '^schedule=[^ ]+ '), '') AS "prefix"
FROM ${table} AS t
WHERE ${abandonedWhere(listed, '$1', '$2', '$3')}
LIMIT $4`.trim(),
    expiryTable,
  );

  // Ends abandoned occurrences without running them (see takeOverAbandoned). Fenced like a
  // reclaim: each applies only while its row is still RUNNING past its lease with the attempts
  // and the hand-over mark the scan saw, so a concurrent take-over or another scanner makes it a
  // no-op. The owner token is cleared: the vanished holder, should it come back, can no longer
  // finalize it.
  const abandonedBookkeeping = `"status" = 'FAIL', "ownerToken" = NULL,
  "lastError" = jsonb_build_object('expired', true, 'ownerId', t."ownerId", 'lastHeartbeatAt', t."modifiedAt"),
  "finishedAt" = CURRENT_TIMESTAMP, "modifiedAt" = CURRENT_TIMESTAMP`;
  const abandonOccurrencesText = `
UPDATE ${table} AS t SET ${abandonedBookkeeping}, "data" = e."data"::jsonb
FROM unnest($1::uuid[], $2::int[], $3::boolean[], $4::text[]) AS e("id", "attempts", "handedOver", "data")
WHERE t."id" = e."id" AND t."status" = 'RUNNING' AND t."attempts" = e."attempts"
  AND COALESCE(t."data" @> ${HANDED_OVER}, false) = e."handedOver"
  AND ${expiredBy('t', '$5::integer')}
RETURNING t."id"`.trim();

  // Ends every occurrence of each (code, runKey prefix) that is RUNNING past its lease (the
  // occurrences of a dynamic schedule removed meanwhile): one range of
  // IDX_job_scheduler_code_run_key each ('~' sorts after every character of an instant).
  const abandonRunKeyRangesText = `
UPDATE ${table} AS t SET ${abandonedBookkeeping}, "data" = k."data"::jsonb
FROM unnest($1::text[], $2::text[], $3::text[]) AS k("code", "prefix", "data")
WHERE t."code" = k."code" AND t."type" = 'SCHEDULE' AND t."status" = 'RUNNING'
  AND t."runKey" COLLATE "C" >= k."prefix" COLLATE "C" AND t."runKey" COLLATE "C" < (k."prefix" || '~') COLLATE "C"
  AND ${expiredBy('t', '$4::integer')}
RETURNING t."id", t."code", t."runKey"`.trim();

  return {
    takeOverAbandoned: (p) => ({
      ...takeOverAbandonedTexts,
      values: [p.codes, p.prefixes, p.leaseMs, p.maxAttempts, p.drop, p.lateMs, p.claimable, p.fallbackLeaseMs, p.dueBy, p.limit, p.ownerId],
      operation: 'take-over',
    }),
    abandonedKeys: (codes, fallbackLeaseMs, dueBy, limit) => ({
      ...abandonedKeysTexts,
      values: [codes, fallbackLeaseMs, dueBy, limit],
      operation: 'take-over',
    }),
    abandonOccurrences: (ids, attempts, handedOver, data, fallbackLeaseMs) => ({
      text: abandonOccurrencesText,
      values: [ids, attempts, handedOver, data, fallbackLeaseMs],
      operation: 'take-over',
    }),
    abandonRunKeyRanges: (codes, prefixes, data, fallbackLeaseMs) => ({
      text: abandonRunKeyRangesText,
      values: [codes, prefixes, data, fallbackLeaseMs],
      operation: 'take-over',
    }),
  };
};
