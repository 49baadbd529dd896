import type { TestDatabase } from '../../test/support/test-database';
import { checkpoint } from './bench-database';

/** A prime: i → (i × SCRAMBLE) mod rows is a permutation of 0..rows-1 unless SCRAMBLE divides rows. */
const SCRAMBLE = 7919;

/**
 * Fills the table with `rows` finished runs (SUCCESS, 50 codes, lock keys as long as the
 * library's) whose last writes spread evenly over a horizon of `rows / ratePerSecond` seconds, so
 * that from now on one crosses the horizon every 1 / ratePerSecond s. Ages are scrambled across
 * the heap, as after days of retention and autovacuum handing freed space to new rows: the rows a
 * prune may delete lie anywhere in the table. Returns the horizon, in ms.
 */
export const seedRetainedHistory = async (database: TestDatabase, rows: number, ratePerSecond: number): Promise<number> => {
  if (rows % SCRAMBLE === 0) throw new Error(`retained history: ${rows} rows share a factor with ${SCRAMBLE}`);
  const horizonMs = Math.round((rows / ratePerSecond) * 1000);
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", "code", "type", "status", "ownerToken", "runKey", "leaseMs", "ownerId",
       "attempts", "createdAt", "modifiedAt", "startedAt", "finishedAt")
     SELECT 'v2:' || translate(rtrim(encode(sha256(convert_to('history-' || i, 'UTF8')), 'base64'), '='), '+/', '-_'),
       'history-' || (i % 50), 'SCHEDULE', 'SUCCESS', gen_random_uuid(),
       to_char((timestamptz '2020-01-01T00:00:00Z' + i * interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
       60000, 'seed-node', 1, at, at, at, at
     FROM generate_series(0, $1::int - 1) AS i
     CROSS JOIN LATERAL (SELECT CURRENT_TIMESTAMP - $2::bigint * INTERVAL '1 millisecond'
       + ((i::bigint * ${SCRAMBLE}) % $1::int) * ($2::float8 / $1::int) * INTERVAL '1 millisecond' AS at) AS k`,
    [rows, horizonMs],
  );
  await database.sql('VACUUM (ANALYZE) "job-scheduler"');
  await checkpoint(database);
  return horizonMs;
};
