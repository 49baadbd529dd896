import type { SqlStatement } from '../job-scheduler.sql';

/**
 * The reads of recorded occurrences, by runKey on IDX_job_scheduler_code_run_key: the scheduler's
 * history (what was recorded when, for missed occurrences and catch-up) and the dashboard's
 * timeline and health window. The operators' other statements are in operations.sql.ts.
 */

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

/** The occurrence reads of one table. */
export interface OccurrenceHistoryStatements {
  /** The latest occurrence runKey of each of `codes` that has one: rows `{ code, runKey }`. */
  latestScheduledRunKeys(codes: readonly string[], status?: 'SUCCESS'): SqlStatement;
  /** The latest runKey of each (code, runKey prefix) pair that has one: rows `{ code, prefix, runKey }`. */
  latestRunKeysByPrefix(codes: readonly string[], prefixes: readonly string[]): SqlStatement;
  /** The occurrence runKeys of a code recorded in [from, to] (ISO 8601 keys; tenant suffixes included). */
  scheduledRunKeysBetween(code: string, from: string, to: string): SqlStatement;
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

/** Builds the occurrence reads for one table. The texts are computed once; each call only binds values. */
export const createOccurrenceHistoryStatements = (table: string): OccurrenceHistoryStatements => {
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

  // Which occurrences of a job some instance recorded in a span (served by
  // IDX_job_scheduler_code_run_key): a lagging instance reports as missed only the others.
  const scheduledRunKeysBetweenText = `
SELECT "runKey" FROM ${table}
WHERE "code" = $1 AND "type" = 'SCHEDULE'
  AND "runKey" COLLATE "C" >= $2::text COLLATE "C" AND "runKey" COLLATE "C" < $3::text COLLATE "C"`.trim();

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

  return {
    latestScheduledRunKeys: (codes, status) => ({ text: latestScheduledRunKeysText, values: [codes, status ?? null], operation: 'history' }),
    latestRunKeysByPrefix: (codes, prefixes) => ({ text: latestRunKeysByPrefixText, values: [codes, prefixes], operation: 'history' }),
    scheduledRunKeysBetween: (code, from, to) => ({ text: scheduledRunKeysBetweenText, values: [code, from, to], operation: 'history' }),
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
