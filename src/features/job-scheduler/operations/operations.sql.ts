import { expiryTexts, leaseRanOut, type SqlStatement } from '../job-scheduler.sql';

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

/** The operators' statements of one table: replication, retention, inspection of runs and leases. */
export interface OperationsStatements {
  replication(): SqlStatement;
  /** The planner's estimate of the table's rows (pg_class.reltuples: no scan), -1 if never analyzed. */
  estimatedRows(): SqlStatement;
  /** Deletes one batch of finished runs: one row, `{ deleted }` (how many). */
  prune(parameters: PruneParameters): SqlStatement;
  findRuns(parameters: FindRunsParameters): SqlStatement;
  runByKey(lockKey: string): SqlStatement;
  expiredLeases(fallbackLeaseMs: number, limit: number): SqlStatement;
  countExpiredLeases(fallbackLeaseMs: number): SqlStatement;
  /** One run by its id, every column but the owner token. */
  runById(id: string): SqlStatement;
}

/** Builds the operators' statements for one table. The texts are computed once; each call only binds values. */
export const createOperationsStatements = (
  table: string,
  /** The table of lease expiries (see 1764547200010-TrackJobSchedulerLeaseExpiries). */
  expiryTable: string,
): OperationsStatements => {
  // Whether a failover could forget what this server acknowledges: physical walsenders (their
  // pg_stat_activity row has no database; logical consumers have one), the synchronous standbys
  // named, and this session's synchronous_commit. Readable without privileges.
  const replicationText = `
SELECT pg_is_in_recovery() AS "inRecovery",
  current_setting('synchronous_standby_names') AS "synchronousStandbyNames",
  current_setting('synchronous_commit') AS "synchronousCommit",
  (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'walsender' AND datid IS NULL)::int AS "standbys"`.trim();

  // Retention: one bounded batch of finished rows older than a database-clock cutoff. RUNNING
  // rows never match; INITIAL SUCCESS rows only when asked (deleting one makes a run-once job run
  // again). SKIP LOCKED leaves a row an acquire is reclaiming right now; the WHERE is re-checked
  // on the locked version, so a row reclaimed meanwhile (RUNNING again) is kept.
  // The "createdAt" bound adds no condition (a row is created before its last write; a clock
  // stepping back could only delay a deletion) but lets IDX_job_scheduler_created_at find the old rows: "modifiedAt" changes on every heartbeat and
  // complete, and an index on it would cost those updates their HOT path (0006's partial index on
  // it, for the take-over scan, already does: docs/limits.md). Planned for its values
  // each time (planEachTime): a cached generic plan does not see the cutoff and scans the table.
  // The status and type conditions are written as literals, one text per shape (validated
  // values only): compared as text ("status"::text = ANY($1)), the planner had no statistics,
  // expected about 1% of the rows past the cutoff and read them all by bitmap for each batch (a
  // batch's cost grew with the backlog). In "createdAt" order the batch is the oldest rows, read
  // from IDX_job_scheduler_created_at until the batch is full. The rows locked are deleted by
  // their ctid (a TID scan), not looked up again by "id" through the primary key: a third less
  // time per row (measured: 7.4 against 11.2 µs with 1e6 rows retained, 11.7 against 14.8 on a
  // table of 30,000; docs/performance.md). A locked row cannot move, so its ctid is the version
  // locked; one that was updated after the statement's snapshot is locked but not deleted (the
  // TID scan reads by that snapshot): kept, as a reclaimed row is.
  const pruneCutoff = `CURRENT_TIMESTAMP - $1::bigint * INTERVAL '1 millisecond'`;
  const pruneTexts = new Map<string, string>();
  const pruneText = (p: PruneParameters): string => {
    const statuses = p.statuses.length > 1 ? `"status" <> 'RUNNING'` : p.statuses[0] === 'FAIL' ? `"status" = 'FAIL'` : `"status" = 'SUCCESS'`;
    const type = p.type === null ? '' : p.type === 'INITIAL' ? `\n    AND "type" = 'INITIAL'` : `\n    AND "type" = 'SCHEDULE'`;
    const shape = statuses + type;
    let text = pruneTexts.get(shape);
    if (text === undefined) {
      text = `
WITH doomed AS (
  SELECT ctid AS "row" FROM ${table}
  WHERE ${statuses}${type}
    AND "createdAt" < ${pruneCutoff}
    AND "modifiedAt" < ${pruneCutoff}
    AND ($2::boolean OR NOT ("type" = 'INITIAL' AND "status" = 'SUCCESS'))
    AND ($4::text[] IS NULL OR "code" = ANY($4::text[]))
  ORDER BY "createdAt"
  LIMIT $3
  FOR UPDATE SKIP LOCKED
),
deleted AS (
  DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT "row" FROM doomed))
  RETURNING 1
)
SELECT count(*)::int AS "deleted" FROM deleted`.trim();
      pruneTexts.set(shape, text);
    }
    return text;
  };

  // Inspection reads every column but the owner token, which is a secret capability.
  const runColumns = `"id", "lockKey", "code", "name", "type"::text AS "type", "status"::text AS "status", "runKey",
  "attempts", "fencingToken"::text AS "fencingToken", "ownerId", "leaseMs", "createdAt",
  to_char("createdAt" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS "createdAtExact",
  "modifiedAt", "startedAt", "finishedAt", "data", "lastError",
  (EXTRACT(EPOCH FROM (CURRENT_TIMESTAMP - "modifiedAt")) * 1000)::bigint::text AS "heartbeatAgeMs"`;

  // One text per shape of filter (only the filters given, so that each shape gets plans that use
  // the indexes: IDX_job_scheduler_created_at, IDX_job_scheduler_code_run_key for a rare code, and
  // for status RUNNING the expiry table's entries, one per run in progress, then the rows on the
  // primary key). Each text is built once.
  const findRunsTexts = new Map<string, Pick<SqlStatement, 'text' | 'withoutExpiryTable'>>();
  const findRunsText = (p: FindRunsParameters): Pick<SqlStatement, 'text' | 'withoutExpiryTable'> => {
    const given = [p.code, p.runKeyPrefix ?? null, p.status, p.type, p.createdFrom, p.createdBefore, p.after]
      .map((value) => (value === null ? '-' : 'x'))
      .join('');
    const shape = `${given}${p.status === 'RUNNING' ? 'R' : ''}`;
    let texts = findRunsTexts.get(shape);
    if (texts === undefined) {
      const conditions: string[] = [];
      let next = 0;
      const parameter = () => `$${++next}`;
      if (p.code !== null) conditions.push(`"code" = ${parameter()}::text`);
      // A prefix is one range of IDX_job_scheduler_code_run_key (U+10FFFF sorts after every character in "C").
      if ((p.runKeyPrefix ?? null) !== null) {
        const prefix = parameter();
        conditions.push(`"runKey" COLLATE "C" >= ${prefix}::text COLLATE "C" AND "runKey" COLLATE "C" < (${prefix}::text || chr(1114111)) COLLATE "C"`);
      }
      // The runs in progress: one entry each in the expiry table (on a database without it, the status alone).
      const HELD = '{held}';
      if (p.status === 'RUNNING') conditions.push(`${HELD}"status" = 'RUNNING'`);
      else if (p.status !== null) conditions.push(`"status"::text = ${parameter()}::text`);
      if (p.type !== null) conditions.push(`"type"::text = ${parameter()}::text`);
      if (p.createdFrom !== null) conditions.push(`"createdAt" >= ${parameter()}::timestamptz`);
      if (p.createdBefore !== null) conditions.push(`"createdAt" < ${parameter()}::timestamptz`);
      if (p.after !== null) conditions.push(`("createdAt", "id") < (${parameter()}::timestamptz, ${parameter()}::uuid)`);
      const text = `SELECT ${runColumns} FROM ${table}
WHERE ${conditions.length === 0 ? 'true' : conditions.join('\n  AND ')}
ORDER BY "createdAt" DESC, "id" DESC
LIMIT ${parameter()}`;
      texts =
        p.status === 'RUNNING'
          ? {
              text: text.replace(HELD, `"id" = ANY (ARRAY(SELECT e."leaseId" FROM ${expiryTable} AS e))\n  AND `),
              withoutExpiryTable: text.replace(HELD, ''),
            }
          : { text };
      findRunsTexts.set(shape, texts);
    }
    return texts;
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

  // The leases that ran out, found from the expiry table (see expiryListed).
  const expiredWhere = (listed: (alias: string) => string) => `${listed('')}"status" = 'RUNNING' AND ${leaseRanOut('', '$1::integer')}`;
  const expiredLeasesTexts = expiryTexts(
    (listed) => `SELECT ${runColumns} FROM ${table} WHERE ${expiredWhere(listed)} ORDER BY "modifiedAt" LIMIT $2`,
    expiryTable,
  );
  const countExpiredLeasesTexts = expiryTexts((listed) => `SELECT count(*)::int AS "count" FROM ${table} WHERE ${expiredWhere(listed)}`, expiryTable);

  const runByIdText = `SELECT ${runColumns} FROM ${table} WHERE "id" = $1::uuid`;

  const estimatedRowsText = `SELECT reltuples::bigint::text AS "rows" FROM pg_class WHERE oid = to_regclass('${table.replace(/'/g, "''")}')`;

  return {
    replication: () => ({ text: replicationText, values: [], operation: 'replication-check' }),
    estimatedRows: () => ({ text: estimatedRowsText, values: [], operation: 'inspect' }),
    prune: (p) => ({
      text: pruneText(p),
      values: [p.olderThanMs, p.includeRunOnceSuccess, p.batchSize, p.codes],
      operation: 'prune',
      planEachTime: true,
    }),
    // Planned for its values each time: how selective a code or a status is decides the plan.
    findRuns: (p) => ({ ...findRunsText(p), values: findRunsValues(p), operation: 'inspect', planEachTime: true }),
    runByKey: (lockKey) => ({ text: runByKeyText, values: [lockKey], operation: 'inspect' }),
    expiredLeases: (fallbackLeaseMs, limit) => ({ ...expiredLeasesTexts, values: [fallbackLeaseMs, limit], operation: 'inspect' }),
    countExpiredLeases: (fallbackLeaseMs) => ({ ...countExpiredLeasesTexts, values: [fallbackLeaseMs], operation: 'inspect' }),
    runById: (id) => ({ text: runByIdText, values: [id], operation: 'inspect' }),
  };
};
