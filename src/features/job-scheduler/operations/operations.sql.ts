import type { SqlStatement } from '../job-scheduler.sql';

/**
 * The operators' statements: retention (prune), inspection (runs, occurrences, expired leases),
 * the scheduler's history reads, the dashboard's reads, the replication reading and the table
 * estimate. None of them decides who holds a run (those are in job-scheduler.sql.ts): they read,
 * or delete finished rows. Pure builders of `{ text, values }`; every caller value travels as a
 * parameter.
 */

/** What the replication check reads from the server the lease writes to. */
export interface ReplicationRow {
  inRecovery: boolean;
  synchronousStandbyNames: string;
  synchronousCommit: string;
  /** Physical (streaming) standbys connected to this server; logical consumers are not counted. */
  standbys: number;
}

export interface PruneParameters {
  statuses: string[];
  type: string | null;
  olderThanMs: number;
  /** Also delete INITIAL SUCCESS rows (their run-once job would run again). */
  includeRunOnceSuccess: boolean;
  batchSize: number;
  /** Only these codes; null for every code. */
  codes: string[] | null;
}

export interface FindRunsParameters {
  code: string | null;
  /** runKey starts with it (only with a code). */
  runKeyPrefix?: string | null;
  status: string | null;
  type: string | null;
  createdFrom: Date | null;
  createdBefore: Date | null;
  /** Keyset cursor: rows strictly after (createdAt, id) in descending order. */
  after: { createdAt: string; id: string } | null;
  limit: number;
}

/** A lease row as the inspection statements return it (the owner token is never read). */
export interface RunRow {
  id: string;
  lockKey: string;
  code: string;
  name: string | null;
  type: string;
  status: string;
  runKey: string | null;
  attempts: number;
  fencingToken: string;
  ownerId: string | null;
  leaseMs: number | null;
  createdAt: Date;
  /** createdAt with microseconds, for a cursor that never skips or repeats a row. */
  createdAtExact: string;
  modifiedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  data: unknown;
  lastError: unknown;
  heartbeatAgeMs: string;
}

/**
 * How a recorded occurrence ended (or stands): RUNNING is running; FAIL is missed when recorded
 * so (data.outcome 'missed'), else failed; SUCCESS is taken over when a first owner vanished
 * (attempts > 1), else succeeded.
 */
export type OccurrenceOutcome = 'succeeded' | 'failed' | 'missed' | 'running' | 'taken-over';

/** One recorded occurrence of a job (scheduled, or asked with runNow) for the dashboard's timeline. */
export interface OccurrenceRow {
  id: string;
  runKey: string;
  /** Decided by the statement (a timeline reads up to 12,000 rows: the fewer columns, the faster). */
  outcome: OccurrenceOutcome;
}

/** One of a job's recent occurrences (for the dashboard's health window). */
export interface RecentOccurrenceRow {
  code: string;
  runKey: string;
  status: string;
  /**
   * From the claim (startedAt) to the finish, in ms, or null while running. One number rather than
   * two timestamps: a health window reads 300 rows per job, and each timestamp is parsed into a Date.
   */
  durationMs: number | null;
  /** A FAIL row's data.outcome (missed, skipped-overlap...), or null. */
  outcome: string | null;
  /** A FAIL row's data.error.message, or null. */
  errorMessage: string | null;
}

/** The latest occurrence of a job, with its status (for the dashboard's health). */
export interface LatestOccurrenceRow {
  code: string;
  runKey: string;
  status: string;
}

/** The operators' statements of one table. */
export interface OperationsStatements {
  replication(): SqlStatement;
  /** The planner's estimate of the table's rows (pg_class.reltuples: no scan), -1 if never analyzed. */
  estimatedRows(): SqlStatement;
  /** The latest occurrence runKey of each of `codes` that has one: rows `{ code, runKey }`. */
  latestScheduledRunKeys(codes: readonly string[], status?: 'SUCCESS'): SqlStatement;
  /** The latest runKey of each (code, runKey prefix) pair that has one: rows `{ code, prefix, runKey }`. */
  latestRunKeysByPrefix(codes: readonly string[], prefixes: readonly string[]): SqlStatement;
  /** The occurrence runKeys of a code recorded in [from, to] (ISO 8601 keys; tenant suffixes included). */
  scheduledRunKeysBetween(code: string, from: string, to: string): SqlStatement;
  prune(parameters: PruneParameters): SqlStatement;
  findRuns(parameters: FindRunsParameters): SqlStatement;
  runByKey(lockKey: string): SqlStatement;
  expiredLeases(fallbackLeaseMs: number, limit: number): SqlStatement;
  countExpiredLeases(fallbackLeaseMs: number): SqlStatement;
  /** One run by its id, every column but the owner token. */
  runById(id: string): SqlStatement;
  /** A job's occurrences due in [from, to) and its runNow runs asked then (ISO 8601 bounds), by runKey, at most `limit`. */
  occurrencesBetween(code: string, from: string, to: string, limit: number): SqlStatement;
  /** A dynamic schedule's occurrences due in [from, to): runKeys `<prefix><instant>` of its handler's code, at most `limit`. */
  scheduleOccurrencesBetween(code: string, prefix: string, from: string, to: string, limit: number): SqlStatement;
  /** The latest occurrence of each of `codes` that has one, with its status: rows `{ code, runKey, status }`. */
  latestOccurrences(codes: readonly string[]): SqlStatement;
  /** The newest `limit` occurrence rows of each of `codes` ('' prefix: declared jobs' keys), newest first per code. */
  recentOccurrences(codes: readonly string[], limit: number): SqlStatement;
  /** The oldest occurrence runKey of a code (of a dynamic schedule: after `prefix`; '' for a declared job): rows `{ runKey }`, at most one. */
  firstOccurrence(code: string, prefix: string): SqlStatement;
}

/** Builds the operators' statements for one table. The texts are computed once; each call only binds values. */
export const createOperationsStatements = (table: string): OperationsStatements => {
  // Whether a failover could forget what this server acknowledges: physical walsenders (their
  // pg_stat_activity row has no database; logical consumers have one), the synchronous standbys
  // named, and this session's synchronous_commit. Readable without privileges.
  const replicationText = `
SELECT pg_is_in_recovery() AS "inRecovery",
  current_setting('synchronous_standby_names') AS "synchronousStandbyNames",
  current_setting('synchronous_commit') AS "synchronousCommit",
  (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'walsender' AND datid IS NULL)::int AS "standbys"`.trim();

  // The scheduler's history: the latest occurrence of each job in $1, by its ISO 8601 runKey
  // (which sorts chronologically in the "C" collation). One statement for any number of jobs: each
  // job is one backward probe of IDX_job_scheduler_code_run_key (a boot with 1,000 jobs reads the
  // history once, not 1,000 times). $2 narrows it to one status (the latest success, for health).
  const latestScheduledRunKeysText = `
SELECT wanted."code", latest."runKey"
FROM unnest($1::text[]) AS wanted("code")
CROSS JOIN LATERAL (
  SELECT "runKey" FROM ${table}
  WHERE "code" = wanted."code" AND "type" = 'SCHEDULE' AND "runKey" ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T'
    AND ($2::text IS NULL OR "status"::text = $2::text)
  ORDER BY "runKey" COLLATE "C" DESC
  LIMIT 1
) AS latest`.trim();

  // The same for dynamic schedules, whose occurrences are `<prefix><ISO 8601 instant>` (the
  // prefix names the schedule and ends in a space): one backward probe of the index per schedule,
  // within the prefix's range ('~' sorts after every character of an instant).
  const latestRunKeysByPrefixText = `
SELECT wanted."code", wanted."prefix", latest."runKey"
FROM unnest($1::text[], $2::text[]) AS wanted("code", "prefix")
CROSS JOIN LATERAL (
  SELECT "runKey" FROM ${table}
  WHERE "code" = wanted."code" AND "type" = 'SCHEDULE'
    AND "runKey" COLLATE "C" >= wanted."prefix" COLLATE "C" AND "runKey" COLLATE "C" < (wanted."prefix" || '~') COLLATE "C"
  ORDER BY "runKey" COLLATE "C" DESC
  LIMIT 1
) AS latest`.trim();

  // Retention: one bounded batch of finished rows older than a database-clock cutoff. RUNNING
  // rows never match; INITIAL SUCCESS rows only when asked (deleting one makes a run-once job run
  // again). SKIP LOCKED leaves a row an acquire is reclaiming right now; the WHERE is re-checked
  // on the locked version, so a row reclaimed meanwhile (RUNNING again) is kept.
  // The "createdAt" bound adds no condition (a row is created before its last write; a clock
  // stepping back could only delay a deletion) but lets IDX_job_scheduler_created_at find the old rows: "modifiedAt" changes on every heartbeat and
  // complete, and an index on it would cost those updates their HOT path. Planned for its values
  // each time (planEachTime): a cached generic plan does not see the cutoff and scans the table.
  const pruneCutoff = `CURRENT_TIMESTAMP - $3::bigint * INTERVAL '1 millisecond'`;
  const pruneText = `
WITH doomed AS (
  SELECT "id" FROM ${table}
  WHERE "status" <> 'RUNNING'
    AND "status"::text = ANY($1::text[])
    AND ($2::text IS NULL OR "type"::text = $2::text)
    AND "createdAt" < ${pruneCutoff}
    AND "modifiedAt" < ${pruneCutoff}
    AND ($4::boolean OR NOT ("type" = 'INITIAL' AND "status" = 'SUCCESS'))
    AND ($6::text[] IS NULL OR "code" = ANY($6::text[]))
  LIMIT $5
  FOR UPDATE SKIP LOCKED
)
DELETE FROM ${table} AS t USING doomed WHERE t."id" = doomed."id"
RETURNING t."id"`.trim();

  // Inspection reads every column but the owner token, which is a secret capability.
  const runColumns = `"id", "lockKey", "code", "name", "type"::text AS "type", "status"::text AS "status", "runKey",
  "attempts", "fencingToken"::text AS "fencingToken", "ownerId", "leaseMs", "createdAt",
  to_char("createdAt" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS "createdAtExact",
  "modifiedAt", "startedAt", "finishedAt", "data", "lastError",
  (EXTRACT(EPOCH FROM (CURRENT_TIMESTAMP - "modifiedAt")) * 1000)::bigint::text AS "heartbeatAgeMs"`;

  // One text per shape of filter (only the filters given, so that each shape gets plans that use
  // the indexes: IDX_job_scheduler_created_at, IDX_job_scheduler_code_run_key for a rare code, the
  // partial index of RUNNING rows for status RUNNING, written as a literal so that it matches the
  // index's predicate). Each text is built once.
  const findRunsTexts = new Map<string, string>();
  const findRunsText = (p: FindRunsParameters): string => {
    const given = [p.code, p.runKeyPrefix ?? null, p.status, p.type, p.createdFrom, p.createdBefore, p.after]
      .map((value) => (value === null ? '-' : 'x'))
      .join('');
    const shape = `${given}${p.status === 'RUNNING' ? 'R' : ''}`;
    let text = findRunsTexts.get(shape);
    if (text === undefined) {
      const conditions: string[] = [];
      let next = 0;
      const parameter = () => `$${++next}`;
      if (p.code !== null) conditions.push(`"code" = ${parameter()}::text`);
      // A prefix is one range of IDX_job_scheduler_code_run_key (U+10FFFF sorts after every character in "C").
      if ((p.runKeyPrefix ?? null) !== null) {
        const prefix = parameter();
        conditions.push(`"runKey" COLLATE "C" >= ${prefix}::text COLLATE "C" AND "runKey" COLLATE "C" < (${prefix}::text || chr(1114111)) COLLATE "C"`);
      }
      if (p.status === 'RUNNING') conditions.push(`"status" = 'RUNNING'`);
      else if (p.status !== null) conditions.push(`"status"::text = ${parameter()}::text`);
      if (p.type !== null) conditions.push(`"type"::text = ${parameter()}::text`);
      if (p.createdFrom !== null) conditions.push(`"createdAt" >= ${parameter()}::timestamptz`);
      if (p.createdBefore !== null) conditions.push(`"createdAt" < ${parameter()}::timestamptz`);
      if (p.after !== null) conditions.push(`("createdAt", "id") < (${parameter()}::timestamptz, ${parameter()}::uuid)`);
      text = `SELECT ${runColumns} FROM ${table}
WHERE ${conditions.length === 0 ? 'true' : conditions.join('\n  AND ')}
ORDER BY "createdAt" DESC, "id" DESC
LIMIT ${parameter()}`;
      findRunsTexts.set(shape, text);
    }
    return text;
  };
  const findRunsValues = (p: FindRunsParameters): unknown[] =>
    (
      [
        p.code,
        p.runKeyPrefix ?? null,
        p.status === 'RUNNING' ? null : p.status,
        p.type,
        p.createdFrom,
        p.createdBefore,
        p.after?.createdAt ?? null,
        p.after?.id ?? null,
      ] as unknown[]
    )
      .filter((value) => value !== null)
      .concat([p.limit]);

  const runByKeyText = `SELECT ${runColumns} FROM ${table} WHERE "lockKey" = $1`;

  const expiredWhere = `"status" = 'RUNNING'
  AND "modifiedAt" < CURRENT_TIMESTAMP - COALESCE("leaseMs", $1::integer) * INTERVAL '1 millisecond'`;
  const expiredLeasesText = `SELECT ${runColumns} FROM ${table} WHERE ${expiredWhere} ORDER BY "modifiedAt" LIMIT $2`;
  const countExpiredLeasesText = `SELECT count(*)::int AS "count" FROM ${table} WHERE ${expiredWhere}`;

  // Which occurrences of a job some instance recorded in a span (served by
  // IDX_job_scheduler_code_run_key): a lagging instance reports as missed only the others.
  const scheduledRunKeysBetweenText = `
SELECT "runKey" FROM ${table}
WHERE "code" = $1 AND "type" = 'SCHEDULE'
  AND "runKey" COLLATE "C" >= $2::text COLLATE "C" AND "runKey" COLLATE "C" < $3::text COLLATE "C"`.trim();

  const runByIdText = `SELECT ${runColumns} FROM ${table} WHERE "id" = $1::uuid`;

  // The dashboard's timeline: two backward range scans of IDX_job_scheduler_code_run_key (the due
  // instants, and the runNow keys "run-now <instant> ..." asked in the span), newest first, no
  // sort and no other row read. The bounds are sub-selects (evaluated once, at run time) so that
  // the planner never estimates the range from its values: for a dense job (100,000 rows in the
  // span) it underestimated the range, read all of it by bitmap and sorted it (0.4 s instead of
  // 15 ms). Each row's outcome is decided here: three columns to send instead of five.
  // `prefix` is SQL prepended to both bounds ($2 and $3); the limit is $4.
  const occurrenceRange = (prefix: string) => `(SELECT "id", "runKey",
  CASE WHEN "status" = 'RUNNING' THEN 'running'
    WHEN "status" = 'FAIL' THEN CASE WHEN "data"->>'outcome' = 'missed' THEN 'missed' ELSE 'failed' END
    WHEN "attempts" > 1 THEN 'taken-over' ELSE 'succeeded' END AS "outcome"
FROM ${table}
WHERE "code" = $1 AND "type" = 'SCHEDULE'
  AND "runKey" COLLATE "C" >= (SELECT (${prefix}$2::text) COLLATE "C") AND "runKey" COLLATE "C" < (SELECT (${prefix}$3::text) COLLATE "C")
ORDER BY "runKey" COLLATE "C" DESC
LIMIT $4)`;
  const occurrencesBetweenText = `${occurrenceRange('')}\nUNION ALL\n${occurrenceRange("'run-now ' || ")}`;
  // A dynamic schedule's keys, "schedule=<encoded id> <instant>", are one range too ($5: the prefix).
  const scheduleOccurrencesBetweenText = occurrenceRange('$5::text || ');

  // As latestScheduledRunKeys, with the status of that latest occurrence: one backward probe per job.
  const latestOccurrencesText = `
SELECT wanted."code", latest."runKey", latest."status"
FROM unnest($1::text[]) AS wanted("code")
CROSS JOIN LATERAL (
  SELECT "runKey", "status"::text AS "status" FROM ${table}
  WHERE "code" = wanted."code" AND "type" = 'SCHEDULE' AND "runKey" ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T'
  ORDER BY "runKey" COLLATE "C" DESC
  LIMIT 1
) AS latest`.trim();

  // The dashboard's health window: each job's newest occurrences, one backward range scan of
  // IDX_job_scheduler_code_run_key per job (keys that start with a digit: due instants).
  const recentOccurrencesText = `
SELECT wanted."code", recent.*
FROM unnest($1::text[]) AS wanted("code")
CROSS JOIN LATERAL (
  SELECT "runKey", "status"::text AS "status",
    round(EXTRACT(EPOCH FROM ("finishedAt" - "startedAt")) * 1000)::float8 AS "durationMs",
    CASE WHEN "status" = 'FAIL' THEN "data"->>'outcome' END AS "outcome",
    CASE WHEN "status" = 'FAIL' THEN left("data"->'error'->>'message', 500) END AS "errorMessage"
  FROM ${table}
  WHERE "code" = wanted."code" AND "type" = 'SCHEDULE' AND "runKey" COLLATE "C" >= '0' AND "runKey" COLLATE "C" < ':'
  ORDER BY "runKey" COLLATE "C" DESC
  LIMIT $2
) AS recent`.trim();

  // The oldest recorded occurrence: one forward probe of IDX_job_scheduler_code_run_key within the
  // keys that start with a digit after the prefix (':' sorts right after '9').
  const firstOccurrenceText = `
SELECT "runKey" FROM ${table}
WHERE "code" = $1 AND "type" = 'SCHEDULE'
  AND "runKey" COLLATE "C" >= ($2::text || '0') COLLATE "C" AND "runKey" COLLATE "C" < ($2::text || ':') COLLATE "C"
ORDER BY "runKey" COLLATE "C"
LIMIT 1`.trim();

  const estimatedRowsText = `SELECT reltuples::bigint::text AS "rows" FROM pg_class WHERE oid = to_regclass('${table.replace(/'/g, "''")}')`;

  return {
    replication: () => ({ text: replicationText, values: [], operation: 'replication-check' }),
    estimatedRows: () => ({ text: estimatedRowsText, values: [], operation: 'inspect' }),
    latestScheduledRunKeys: (codes, status) => ({ text: latestScheduledRunKeysText, values: [codes, status ?? null], operation: 'history' }),
    latestRunKeysByPrefix: (codes, prefixes) => ({ text: latestRunKeysByPrefixText, values: [codes, prefixes], operation: 'history' }),
    scheduledRunKeysBetween: (code, from, to) => ({ text: scheduledRunKeysBetweenText, values: [code, from, to], operation: 'history' }),
    prune: (p) => ({
      text: pruneText,
      values: [p.statuses, p.type, p.olderThanMs, p.includeRunOnceSuccess, p.batchSize, p.codes],
      operation: 'prune',
      planEachTime: true,
    }),
    // Planned for its values each time: how selective a code or a status is decides the plan.
    findRuns: (p) => ({ text: findRunsText(p), values: findRunsValues(p), operation: 'inspect', planEachTime: true }),
    runByKey: (lockKey) => ({ text: runByKeyText, values: [lockKey], operation: 'inspect' }),
    expiredLeases: (fallbackLeaseMs, limit) => ({ text: expiredLeasesText, values: [fallbackLeaseMs, limit], operation: 'inspect' }),
    countExpiredLeases: (fallbackLeaseMs) => ({ text: countExpiredLeasesText, values: [fallbackLeaseMs], operation: 'inspect' }),
    runById: (id) => ({ text: runByIdText, values: [id], operation: 'inspect' }),
    occurrencesBetween: (code, from, to, limit) => ({ text: occurrencesBetweenText, values: [code, from, to, limit], operation: 'inspect' }),
    scheduleOccurrencesBetween: (code, prefix, from, to, limit) => ({
      text: scheduleOccurrencesBetweenText,
      values: [code, from, to, limit, prefix],
      operation: 'inspect',
    }),
    latestOccurrences: (codes) => ({ text: latestOccurrencesText, values: [codes], operation: 'inspect' }),
    recentOccurrences: (codes, limit) => ({ text: recentOccurrencesText, values: [codes, limit], operation: 'inspect' }),
    firstOccurrence: (code, prefix) => ({ text: firstOccurrenceText, values: [code, prefix], operation: 'inspect' }),
  };
};
