import type { SqlStatement } from '../../job-scheduler/job-scheduler.sql';

/** A stored schedule as its table holds it (what a write sends, what a read returns). */
export interface ScheduleRow {
  id: string;
  handler: string;
  cron: string | null;
  /** bigint: read as text. */
  everyMs: string | number | null;
  timeZone: string | null;
  data: unknown;
  tenantId: string | null;
  enabled: boolean;
  overlap: string;
  missed: string;
  timeoutMs: number | null;
  leaseMs: number | null;
}

/** A row as reads return it: its version (text: bigint), its timestamps, and whether it is a tombstone. */
export interface StoredScheduleRow extends ScheduleRow {
  version: string;
  removed: boolean;
  createdAt: Date;
  modifiedAt: Date;
}

export interface ScheduleListParameters {
  handler: string | null;
  tenantId: string | null;
  enabled: boolean | null;
  after: string | null;
  /** id starts with it, or null. */
  idPrefix?: string | null;
  limit: number;
}

/** How long a removed schedule's tombstone stays, so that every instance's change poll sees the removal. */
export const TOMBSTONE_RETENTION_MS = 7 * 86_400_000;

export interface DynamicScheduleStatements {
  /** Inserts or replaces a schedule (a tombstone comes back to life), with the next version. */
  upsert(row: ScheduleRow): SqlStatement;
  /**
   * `upsert` of many rows in one statement (one parameter per column, an array each): each row
   * its own next version, drawn in the rows' order under the same lock. Ids must be distinct.
   */
  upsertMany(rows: readonly ScheduleRow[]): SqlStatement;
  /** Turns a schedule into a tombstone with the next version (rows `{ id, version }`); also deletes tombstones past their retention. */
  remove(id: string): SqlStatement;
  get(id: string): SqlStatement;
  /** Of these ids, those of live schedules (not removed): rows `{ id }`. */
  live(ids: readonly string[]): SqlStatement;
  /** Enables or disables a live schedule, with the next version. */
  setEnabled(id: string, enabled: boolean): SqlStatement;
  /** A page of live schedules in id order ("C" collation), after a cursor. */
  list(parameters: ScheduleListParameters): SqlStatement;
  /** Rows (tombstones included) whose version is above `version`, in version order. */
  changesSince(version: string, limit: number): SqlStatement;
  /** The greatest version written so far ("0" for none). */
  currentVersion(): SqlStatement;
}

const columns = `"id", "handler", "cron", "everyMs"::text AS "everyMs", "timeZone", "data", "tenantId", "enabled", "overlap", "missed",
  "timeoutMs", "leaseMs", "version"::text AS "version", "removedAt" IS NOT NULL AS "removed", "createdAt", "modifiedAt"`;

/**
 * The statements of the dynamic schedules' table, each one round trip. Writers are serialized by
 * a transaction-scoped advisory lock taken in the statement itself, before it draws its version:
 * versions are then committed in the order they are drawn, so a reader that saw version v has seen
 * every version below it, and "the versions above the last one seen" never skips a change.
 */
export const createDynamicScheduleStatements = (table: string, versionSequence: string): DynamicScheduleStatements => {
  const lockKey = `hashtextextended(${`'${`${table} versions`.replace(/'/g, "''")}'`}, 0)`;
  const sequence = `'${versionSequence.replace(/'/g, "''")}'`;
  const serialized = `serialized AS (SELECT pg_advisory_xact_lock(${lockKey}))`;

  const insertColumns = `"id", "handler", "cron", "everyMs", "timeZone", "data", "tenantId", "enabled", "overlap", "missed", "timeoutMs", "leaseMs", "version"`;
  // What upsert and upsertMany both do to a row that exists (a tombstone comes back to life, created anew).
  const onConflict = `
ON CONFLICT ("id") DO UPDATE SET "handler" = EXCLUDED."handler", "cron" = EXCLUDED."cron", "everyMs" = EXCLUDED."everyMs",
  "timeZone" = EXCLUDED."timeZone", "data" = EXCLUDED."data", "tenantId" = EXCLUDED."tenantId", "enabled" = EXCLUDED."enabled",
  "overlap" = EXCLUDED."overlap", "missed" = EXCLUDED."missed", "timeoutMs" = EXCLUDED."timeoutMs", "leaseMs" = EXCLUDED."leaseMs",
  "version" = EXCLUDED."version", "removedAt" = NULL,
  "createdAt" = CASE WHEN t."removedAt" IS NULL THEN t."createdAt" ELSE CURRENT_TIMESTAMP END,
  "modifiedAt" = CURRENT_TIMESTAMP
RETURNING ${columns}`;

  const upsertText = `
WITH ${serialized}
INSERT INTO ${table} AS t (${insertColumns})
SELECT $1, $2, $3, $4::bigint, $5, $6::jsonb, $7, $8, $9, $10, $11, $12, nextval(${sequence}::regclass) FROM serialized
${onConflict.trim()}`.trim();

  // The same write for many rows: twelve array parameters whatever their length (far below the
  // protocol's 65,535 parameters). The rows are joined to the lock, so no version is drawn before
  // it is held; nextval is evaluated after the sort, so versions ascend in the rows' order.
  const upsertManyText = `
WITH ${serialized},
input AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::boolean[], $9::text[],
    $10::text[], $11::integer[], $12::integer[]) WITH ORDINALITY
    AS i("id", "handler", "cron", "everyMs", "timeZone", "data", "tenantId", "enabled", "overlap", "missed", "timeoutMs", "leaseMs", "ordinal")
)
INSERT INTO ${table} AS t (${insertColumns})
SELECT i."id", i."handler", i."cron", i."everyMs", i."timeZone", i."data"::jsonb, i."tenantId", i."enabled", i."overlap", i."missed",
  i."timeoutMs", i."leaseMs", nextval(${sequence}::regclass)
FROM serialized CROSS JOIN input AS i
ORDER BY i."ordinal"
${onConflict.trim()}`.trim();

  const removeText = `
WITH ${serialized},
purged AS (
  DELETE FROM ${table} WHERE "removedAt" < CURRENT_TIMESTAMP - INTERVAL '${TOMBSTONE_RETENTION_MS} milliseconds' AND "id" <> $1
)
UPDATE ${table} AS t SET "removedAt" = CURRENT_TIMESTAMP, "modifiedAt" = CURRENT_TIMESTAMP, "version" = nextval(${sequence}::regclass)
FROM serialized
WHERE t."id" = $1 AND t."removedAt" IS NULL
RETURNING t."id", t."version"::text AS "version"`.trim();

  const getText = `SELECT ${columns} FROM ${table} WHERE "id" = $1 AND "removedAt" IS NULL`;
  const liveText = `SELECT "id" FROM ${table} WHERE "id" = ANY($1::text[]) AND "removedAt" IS NULL`;

  const setEnabledText = `
WITH ${serialized}
UPDATE ${table} AS t SET "enabled" = $2, "version" = nextval(${sequence}::regclass), "modifiedAt" = CURRENT_TIMESTAMP
FROM serialized
WHERE t."id" = $1 AND t."removedAt" IS NULL
RETURNING ${columns}`.trim();

  // A keyset page in id order. An id prefix starts the walk at the prefix in the primary key
  // (every id that starts with it sorts at or after it) and keeps those that start with it.
  const listText = `
SELECT ${columns} FROM ${table}
WHERE "removedAt" IS NULL
  AND ($1::text IS NULL OR "handler" = $1::text)
  AND ($2::text IS NULL OR "tenantId" = $2::text)
  AND ($3::boolean IS NULL OR "enabled" = $3::boolean)
  AND ($4::text IS NULL OR "id" > $4::text)
  AND ($6::text IS NULL OR ("id" >= $6::text AND starts_with("id", $6::text)))
ORDER BY "id"
LIMIT $5`.trim();

  // t."version", the bigint: a bare "version" in ORDER BY names the output column, its text (10 before 9).
  const changesSinceText = `SELECT ${columns} FROM ${table} AS t WHERE t."version" > $1::bigint ORDER BY t."version" LIMIT $2`;
  const currentVersionText = `SELECT COALESCE(max("version"), 0)::text AS "version" FROM ${table}`;

  return {
    upsert: (row) => ({
      text: upsertText,
      values: [
        row.id,
        row.handler,
        row.cron,
        row.everyMs,
        row.timeZone,
        row.data === undefined ? null : JSON.stringify(row.data),
        row.tenantId,
        row.enabled,
        row.overlap,
        row.missed,
        row.timeoutMs,
        row.leaseMs,
      ],
      operation: 'schedules',
    }),
    upsertMany: (rows) => ({
      text: upsertManyText,
      values: [
        rows.map((row) => row.id),
        rows.map((row) => row.handler),
        rows.map((row) => row.cron),
        rows.map((row) => (row.everyMs === null ? null : String(row.everyMs))),
        rows.map((row) => row.timeZone),
        rows.map((row) => (row.data === undefined ? null : JSON.stringify(row.data))),
        rows.map((row) => row.tenantId),
        rows.map((row) => row.enabled),
        rows.map((row) => row.overlap),
        rows.map((row) => row.missed),
        rows.map((row) => row.timeoutMs),
        rows.map((row) => row.leaseMs),
      ],
      operation: 'schedules',
    }),
    remove: (id) => ({ text: removeText, values: [id], operation: 'schedules' }),
    get: (id) => ({ text: getText, values: [id], operation: 'schedules' }),
    live: (ids) => ({ text: liveText, values: [ids], operation: 'schedules' }),
    setEnabled: (id, enabled) => ({ text: setEnabledText, values: [id, enabled], operation: 'schedules' }),
    // Planned for its filters each time: a tenant's few schedules are found by their index.
    list: (p) => ({
      text: listText,
      values: [p.handler, p.tenantId, p.enabled, p.after, p.limit, p.idPrefix ?? null],
      operation: 'schedules',
      planEachTime: true,
    }),
    changesSince: (version, limit) => ({ text: changesSinceText, values: [version, limit], operation: 'schedules' }),
    currentVersion: () => ({ text: currentVersionText, values: [], operation: 'schedules' }),
  };
};
