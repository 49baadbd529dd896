import type { AcquireRow } from '../../src/features/job-scheduler/job-scheduler.sql';
import type { TestDatabase } from '../../test/support/test-database';
import { acquiredRun, acquireParameters, LIBRARY_STATEMENTS, rawVariant } from './raw-variants';

const FUNCTION_NAME = '"bench_job_scheduler_acquire"';

/**
 * Prototype of a PgBouncer-safe fast path: the library's acquire statement, verbatim, inside a
 * PL/pgSQL function. PL/pgSQL caches its plan per server session, so the statement is parsed
 * and planned once per server connection, whichever client uses it; the client only sends a
 * small unnamed `SELECT * FROM f($1..$9)`. Nothing lives on the client connection, so it works
 * behind PgBouncer in transaction pooling, where named prepared statements do not.
 */
export const installAcquireFunction = async (database: TestDatabase): Promise<void> => {
  const acquire = LIBRARY_STATEMENTS.acquire(acquireParameters('', '', '')).text;
  await database.sql(`
CREATE OR REPLACE FUNCTION ${FUNCTION_NAME}(
  varchar, varchar, varchar, "job-scheduler_type_enum", uuid, varchar, integer, varchar, boolean)
RETURNS TABLE ("id" uuid, "fencingToken" text, "attempts" integer, "reclaimed" boolean, "status" text)
LANGUAGE plpgsql AS $function$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${acquire};
END $function$`);
};

const CALL = `SELECT * FROM ${FUNCTION_NAME}($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

/** The library's acquire through the function above (install it first), unnamed statements. */
export const RAW_FUNCTION = rawVariant(
  'raw-function',
  "raw pg: the library's acquire inside a PL/pgSQL function (plan cached per server session), unnamed calls: PgBouncer-safe",
  false,
  async (query, parameters) => acquiredRun(await query<AcquireRow>({ text: CALL, values: LIBRARY_STATEMENTS.acquire(parameters).values, operation: 'acquire' })),
);
