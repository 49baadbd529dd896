import type { AcquireRow, SqlStatement } from '../../src/features/job-scheduler/job-scheduler.sql';
import { acquiredRun, LIBRARY_STATEMENTS, rawVariant, type AcquireAlgorithm } from './raw-variants';

/**
 * The library's acquire through the function its migrations install
 * (1764547200005-AddJobSchedulerAcquireFunction): PL/pgSQL caches the statement's plan per server
 * session, so the client only sends a small `SELECT * FROM "job-scheduler_acquire"($1..$9)`.
 */
const throughFunction: AcquireAlgorithm = async (query, parameters) => {
  const statement = LIBRARY_STATEMENTS.acquire(parameters);
  const call: SqlStatement = { ...statement, text: statement.viaFunction ?? '' };
  return acquiredRun(await query<AcquireRow>(call));
};

/** Unnamed calls of the function: what the library sends with preparedStatements: false. */
export const RAW_FUNCTION = rawVariant(
  'raw-function',
  "raw pg: the library's acquire function (plan cached per server session), unnamed calls: PgBouncer-safe",
  false,
  throughFunction,
);

/** Named prepared calls of the function, to compare with the named statement itself (raw+prepared). */
export const RAW_FUNCTION_PREPARED = rawVariant('raw-function+prepared', "raw pg: the library's acquire function, named prepared calls", true, throughFunction);
