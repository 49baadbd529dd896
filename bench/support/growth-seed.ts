import { JobSchedulerType } from '../../src/features/job-scheduler/job-scheduler.entity';
import { buildLockKey } from '../../src/features/job-scheduler/job-identity';
import type { TestDatabase } from '../../test/support/test-database';
import { checkpoint } from './bench-database';

export const GROWTH_CODE = 'growth';

/** The scheduler's occurrence key of past tick `index`: one a minute from 2020-01-01, ISO 8601. */
const RUN_KEY_SQL = `to_char((timestamptz '2020-01-01T00:00:00Z' + i * interval '1 minute') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** buildLockKey in SQL: `v2:` + unpadded base64url SHA-256 of the identity's JSON. */
const LOCK_KEY_SQL = `'v2:' || translate(rtrim(encode(sha256(convert_to(
  '{"version":2,"type":"SCHEDULE","code":"${GROWTH_CODE}","runKey":"' || k."runKey" || '"}', 'UTF8')), 'base64'), '='), '+/', '-_')`;

/**
 * Fills the table as production does over time: one finished (SUCCESS) row per past tick, with
 * the lock keys the library computes. Then VACUUM ANALYZE and a CHECKPOINT, so every size starts
 * from the same settled state.
 */
export const seedPastTicks = async (database: TestDatabase, rows: number): Promise<void> => {
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", "code", "type", "status", "ownerToken", "runKey", "leaseMs", "ownerId",
       "fencingToken", "attempts", "createdAt", "modifiedAt", "startedAt", "finishedAt")
     SELECT ${LOCK_KEY_SQL}, '${GROWTH_CODE}', 'SCHEDULE', 'SUCCESS', gen_random_uuid(), k."runKey", 60000, 'seed-node',
       1, 1, k."at", k."at" + interval '40 ms', k."at", k."at" + interval '40 ms'
     FROM generate_series(1, $1::int) AS i
     CROSS JOIN LATERAL (SELECT ${RUN_KEY_SQL} AS "runKey", timestamptz '2020-01-01T00:00:00Z' + i * interval '1 minute' AS "at") AS k`,
    [rows],
  );
  const [first] = await database.sql<{ lockKey: string; runKey: string }>(
    `SELECT "lockKey", "runKey" FROM "job-scheduler" WHERE "code" = $1 ORDER BY "runKey" LIMIT 1`,
    [GROWTH_CODE],
  );
  if (first.lockKey !== buildLockKey(JobSchedulerType.SCHEDULE, GROWTH_CODE, first.runKey)) {
    throw new Error(`seeded lock key ${first.lockKey} is not the library's key for runKey ${first.runKey}`);
  }
  await database.sql('VACUUM (ANALYZE) "job-scheduler"');
  await checkpoint(database);
};

/** Future ticks, in order, as the scheduler writes them after the seeded past. */
export const nextTickRunKey = (sequence: number): string => new Date(Date.UTC(2030, 0, 1) + sequence * 60_000).toISOString();

export interface TableSize {
  rows: number;
  /** Heap with its TOAST, free space and visibility maps. */
  tableBytes: number;
  /** Each index of the table, by name. */
  indexBytes: Map<string, number>;
}

export const measureTableSize = async (database: TestDatabase): Promise<TableSize> => {
  const [table] = await database.sql<{ rows: string; bytes: string }>(
    `SELECT (SELECT count(*) FROM "job-scheduler")::text AS rows, pg_table_size('"job-scheduler"')::text AS bytes`,
  );
  const indexes = await database.sql<{ name: string; bytes: string }>(
    `SELECT indexrelid::regclass::text AS name, pg_relation_size(indexrelid)::text AS bytes
     FROM pg_index WHERE indrelid = '"job-scheduler"'::regclass ORDER BY 1`,
  );
  return {
    rows: Number(table.rows),
    tableBytes: Number(table.bytes),
    indexBytes: new Map(indexes.map((index) => [index.name, Number(index.bytes)])),
  };
};
