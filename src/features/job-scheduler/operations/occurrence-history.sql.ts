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

/**
 * A job's health window, computed by the statement from its newest occurrence rows (the dashboard
 * maps it to a JobHealthWindow). "Finished" rows are those not RUNNING; "of the day" those whose
 * runKey (a due instant, plus a tenant suffix) sorts at or after the day's start.
 */
export interface HealthWindowRow {
  code: string;
  /** The runKey prefix asked with the code: '' for a declared job, `schedule=<encoded id> ` for a dynamic schedule. */
  prefix: string;
  /** The pair's place in the statement's input, from 1. */
  ordinal: number;
  /** Of the 10 newest finished rows: how many, and how many succeeded. */
  last10Finished: number;
  last10Succeeded: number;
  /** Of the finished rows of the day: how many, and how many succeeded. */
  dayFinished: number;
  daySucceeded: number;
  /** FAIL rows newer than the newest finished row that did not fail. */
  consecutiveFailures: number;
  /** The newest FAIL row's runKey, its data.error.message (500 characters at most) and data.outcome; null without one. */
  lastFailureKey: string | null;
  lastFailureMessage: string | null;
  lastFailureOutcome: string | null;
  /** The newest SUCCESS row's runKey, or null. Both keys come without the prefix. */
  lastSuccessKey: string | null;
  /** How the newest finished row ended, or null without one. */
  lastOutcome: Exclude<OccurrenceOutcome, 'running'> | null;
  /** p50 and p95 (nearest rank) of the day's durations in ms, or null without one. */
  durationPercentiles: [number, number] | null;
  /** The day's 30 newest durations in ms, oldest first, or null without one. */
  recentDurations: number[] | null;
}

/**
 * A job's state over its newest finished occurrences (at most 10): enough to tell ok, degraded
 * and failing apart (JobHealthState) for every job at once, without reading a whole window, and
 * what a failing job failed with (a failing job failed within its last 10).
 */
export interface HealthStateRow {
  code: string;
  /** Finished occurrences read (at most 10), and how many succeeded. */
  finished: number;
  succeeded: number;
  /** FAIL rows newer than the newest finished row that did not fail, within those read (10: ten or more). */
  failuresInARow: number;
  /** The newest FAIL row read: its runKey, data.error.message (500 characters at most) and data.outcome; null without one. */
  lastFailureKey: string | null;
  lastFailureMessage: string | null;
  lastFailureOutcome: string | null;
}

/** The latest occurrence of a job, with its status (for the dashboard's health). */
export interface LatestOccurrenceRow {
  code: string;
  runKey: string;
  status: string;
}

/** The occurrence reads of one table. */
export interface OccurrenceHistoryStatements {
  /**
   * The latest occurrence runKey (with 'SUCCESS': the latest success's) of each of `codes` that
   * has one, among the keys that sort before `before` (all of them when absent): rows `{ code, runKey }`.
   */
  latestScheduledRunKeys(codes: readonly string[], status?: 'SUCCESS', before?: string): SqlStatement;
  /**
   * The latest runKey of each (code, runKey prefix) pair that has one, among the pair's keys that
   * sort before the prefix then `before` (all of them when absent): rows `{ code, prefix, runKey }`.
   */
  latestRunKeysByPrefix(codes: readonly string[], prefixes: readonly string[], before?: string): SqlStatement;
  /** The occurrence runKeys of a code recorded in [from, to] (ISO 8601 keys; tenant suffixes included). */
  scheduledRunKeysBetween(code: string, from: string, to: string): SqlStatement;
  /** A job's occurrences due in [from, to) and its runNow runs asked then (ISO 8601 bounds), by runKey, at most `limit`. */
  occurrencesBetween(code: string, from: string, to: string, limit: number): SqlStatement;
  /** A dynamic schedule's occurrences due in [from, to): runKeys `<prefix><instant>` of its handler's code, at most `limit`. */
  scheduleOccurrencesBetween(code: string, prefix: string, from: string, to: string, limit: number): SqlStatement;
  /** The latest occurrence of each of `codes` that has one, with its status: rows `{ code, runKey, status }`. */
  latestOccurrences(codes: readonly string[]): SqlStatement;
  /**
   * The health window of each (code, runKey prefix) pair over its newest `limit` occurrence rows
   * (keys that are the prefix then a digit: due instants), the day starting at `dayFrom` (an ISO
   * 8601 instant): one row per pair. A declared job's prefix is '', a dynamic schedule's
   * `schedule=<encoded id> ` (its handler's code). `codes` and `prefixes` are as long.
   */
  healthWindows(codes: readonly string[], prefixes: readonly string[], limit: number, dayFrom: string): SqlStatement;
  /** The health state of each of `codes` over its 10 newest finished occurrences: one row per code. */
  healthStates(codes: readonly string[]): SqlStatement;
  /** The oldest occurrence runKey of a code (of a dynamic schedule: after `prefix`; '' for a declared job): rows `{ runKey }`, at most one. */
  firstOccurrence(code: string, prefix: string): SqlStatement;
}

/** An upper bound of occurrence keys that bounds nothing: '~' sorts after every character of an instant. */
const UNBOUNDED = '~';

/** A row's OccurrenceOutcome, decided by the statement (the timeline's marks, a window's last outcome). */
const OUTCOME = `CASE WHEN "status" = 'RUNNING' THEN 'running'
    WHEN "status" = 'FAIL' THEN CASE WHEN "data"->>'outcome' = 'missed' THEN 'missed' ELSE 'failed' END
    WHEN "attempts" > 1 THEN 'taken-over' ELSE 'succeeded' END`;

/** Builds the occurrence reads for one table. The texts are computed once; each call only binds values. */
export const createOccurrenceHistoryStatements = (table: string): OccurrenceHistoryStatements => {
  // The scheduler's history: the latest occurrence of each job in $1, by its ISO 8601 runKey
  // (which sorts chronologically in the "C" collation). One statement for any number of jobs: each
  // job is one backward probe of IDX_job_scheduler_code_run_key (a boot with 1,000 jobs reads the
  // history once, not 1,000 times). The latest success (for health) is a text of its own with the
  // status as a literal of its enum: compared as text ("status"::text = $2), the planner had no
  // statistics for it, costed each probe 150 times too high, and PostgreSQL JIT-compiled the
  // statement from ~125 jobs on (1,000 jobs: 9 ms of work, 60-150 ms of compiling).
  // $2 bounds the keys from above (a boot reads the history as of its instant: a claim ahead of an
  // instant still to come, written meanwhile, must not hide the instants that passed); '~' sorts
  // after every key that starts with a digit, so it bounds nothing.
  const latestRunKeysText = (statusCondition: string) =>
    `
SELECT wanted."code", latest."runKey"
FROM unnest($1::text[]) AS wanted("code")
CROSS JOIN LATERAL (
  SELECT "runKey" FROM ${table}
  WHERE "code" = wanted."code" AND "type" = 'SCHEDULE' AND "runKey" ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T'${statusCondition}
    AND "runKey" COLLATE "C" < $2::text COLLATE "C"
  ORDER BY "runKey" COLLATE "C" DESC
  LIMIT 1
) AS latest`.trim();
  const latestScheduledRunKeysText = latestRunKeysText('');
  const latestSucceededRunKeysText = latestRunKeysText(`\n    AND "status" = 'SUCCESS'`);

  // The same for dynamic schedules, whose occurrences are `<prefix><ISO 8601 instant>` (the
  // prefix names the schedule and ends in a space): one backward probe of the index per schedule,
  // within the prefix's range, up to the prefix then $3 ('~' sorts after every character of an instant).
  const latestRunKeysByPrefixText = `
SELECT wanted."code", wanted."prefix", latest."runKey"
FROM unnest($1::text[], $2::text[]) AS wanted("code", "prefix")
CROSS JOIN LATERAL (
  SELECT "runKey" FROM ${table}
  WHERE "code" = wanted."code" AND "type" = 'SCHEDULE'
    AND "runKey" COLLATE "C" >= wanted."prefix" COLLATE "C" AND "runKey" COLLATE "C" < (wanted."prefix" || $3::text) COLLATE "C"
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
  ${OUTCOME} AS "outcome"
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

  // The dashboard's health window: each (code, prefix) pair's newest $2 occurrences (keys that are
  // the prefix then a digit: due instants; the prefix is '' for a declared job, a dynamic schedule's
  // `schedule=<encoded id> ` under its handler's code, from $4), one backward range scan of
  // IDX_job_scheduler_code_run_key per pair, aggregated here into one row per pair (whatever $2,
  // one row of a few numbers is sent per pair, not $2 rows). The keys returned are without the
  // prefix; the ordinal is the pair's place in the input (no sort needed to keep it).
  // The finished rows (not RUNNING) come newest first from the index, so one window pass, with no
  // sort, numbers them (row_number), counts the failures so far (the newest failure is the one at
  // count 1) and the day's durations so far (the 30 newest are those at count <= 30). Failures in
  // a row: the rank of the newest finished row that did not fail, less one (all of them if none).
  // A duration is the handler's run time where the finish recorded it (data.handlerMs, a number),
  // else claim (startedAt) to finish. "Of the day": the runKey sorts at or after the prefix then $3
  // (ISO 8601 sorts chronologically in the "C" collation; a tenant suffix sorts after its instant).
  // lastOutcome: how the newest finished row ended (rank 1), as the timeline names it.
  const healthWindowsText = `
SELECT wanted."code", wanted."prefix", wanted."ordinal"::int AS "ordinal",
  window_of."last10Finished", window_of."last10Succeeded", window_of."dayFinished", window_of."daySucceeded",
  window_of."consecutiveFailures", substr(window_of."lastFailureKey", char_length(wanted."prefix") + 1) AS "lastFailureKey",
  window_of."lastFailureMessage", window_of."lastFailureOutcome",
  substr(window_of."lastSuccessKey", char_length(wanted."prefix") + 1) AS "lastSuccessKey", window_of."lastOutcome",
  window_of."durationPercentiles", window_of."recentDurations"
FROM unnest($1::text[], $4::text[]) WITH ORDINALITY AS wanted("code", "prefix", "ordinal")
CROSS JOIN LATERAL (
  SELECT
    count(*) FILTER (WHERE "rank" <= 10)::int AS "last10Finished",
    count(*) FILTER (WHERE "rank" <= 10 AND "status" = 'SUCCESS')::int AS "last10Succeeded",
    count(*) FILTER (WHERE "ofDay")::int AS "dayFinished",
    count(*) FILTER (WHERE "ofDay" AND "status" = 'SUCCESS')::int AS "daySucceeded",
    COALESCE(min("rank") FILTER (WHERE "status" <> 'FAIL') - 1, count(*))::int AS "consecutiveFailures",
    max("runKey") FILTER (WHERE "status" = 'FAIL' AND "failures" = 1) AS "lastFailureKey",
    max("errorMessage") FILTER (WHERE "status" = 'FAIL' AND "failures" = 1) AS "lastFailureMessage",
    max("outcome") FILTER (WHERE "status" = 'FAIL' AND "failures" = 1) AS "lastFailureOutcome",
    max("runKey") FILTER (WHERE "status" = 'SUCCESS') AS "lastSuccessKey",
    max("finishedOutcome") FILTER (WHERE "rank" = 1) AS "lastOutcome",
    percentile_disc(ARRAY[0.5, 0.95]::float8[]) WITHIN GROUP (ORDER BY "durationMs") FILTER (WHERE "ofDay") AS "durationPercentiles",
    array_agg("durationMs" ORDER BY "rank" DESC) FILTER (WHERE "ofDay" AND "durationMs" IS NOT NULL AND "dayDurations" <= 30) AS "recentDurations"
  FROM (
    SELECT finished.*,
      row_number() OVER newest AS "rank",
      count(*) FILTER (WHERE finished."status" = 'FAIL') OVER newest AS "failures",
      count(finished."durationMs") FILTER (WHERE finished."ofDay") OVER newest AS "dayDurations"
    FROM (
      SELECT "runKey" COLLATE "C" AS "runKey", "status"::text AS "status",
        "runKey" COLLATE "C" >= (wanted."prefix" || $3::text) COLLATE "C" AS "ofDay",
        round(COALESCE(
          CASE WHEN jsonb_typeof("data"->'handlerMs') = 'number' THEN ("data"->>'handlerMs')::float8 END,
          EXTRACT(EPOCH FROM ("finishedAt" - "startedAt")) * 1000
        ))::float8 AS "durationMs",
        CASE WHEN "status" = 'FAIL' THEN "data"->>'outcome' END AS "outcome",
        ${OUTCOME} AS "finishedOutcome",
        CASE WHEN "status" = 'FAIL' THEN left("data"->'error'->>'message', 500) END AS "errorMessage"
      FROM ${table}
      WHERE "code" = wanted."code" AND "type" = 'SCHEDULE'
        AND "runKey" COLLATE "C" >= (wanted."prefix" || '0') COLLATE "C" AND "runKey" COLLATE "C" < (wanted."prefix" || ':') COLLATE "C"
      ORDER BY "runKey" COLLATE "C" DESC
      LIMIT $2
    ) AS finished
    WHERE finished."status" <> 'RUNNING'
    WINDOW newest AS (ORDER BY finished."runKey" DESC ROWS UNBOUNDED PRECEDING)
  ) AS ranked
) AS window_of`.trim();

  // The health state of every job at once (the dashboard's failing list over all jobs, while the
  // windows above are read for one page of them): each job's 10 newest FINISHED occurrences, one
  // backward range scan of IDX_job_scheduler_code_run_key that skips RUNNING rows and stops at the
  // tenth, numbered (and its failures counted) newest first as in the window above. The same 10
  // rows as a window's "last 10", so both agree on failing.
  // About 10 rows per job instead of 300: 1,000 jobs are ~10,000 index entries, and the planner's
  // cost stays under jit_above_cost, where the windows of 1,000 jobs spent 320 ms compiling.
  const healthStatesText = `
SELECT wanted."code", state."finished", state."succeeded", state."failuresInARow",
  state."lastFailureKey", state."lastFailureMessage", state."lastFailureOutcome"
FROM unnest($1::text[]) AS wanted("code")
CROSS JOIN LATERAL (
  SELECT count(*)::int AS "finished",
    count(*) FILTER (WHERE "status" = 'SUCCESS')::int AS "succeeded",
    COALESCE(min("rank") FILTER (WHERE "status" <> 'FAIL') - 1, count(*))::int AS "failuresInARow",
    max("runKey") FILTER (WHERE "status" = 'FAIL' AND "failures" = 1) AS "lastFailureKey",
    max("errorMessage") FILTER (WHERE "status" = 'FAIL' AND "failures" = 1) AS "lastFailureMessage",
    max("outcome") FILTER (WHERE "status" = 'FAIL' AND "failures" = 1) AS "lastFailureOutcome"
  FROM (
    SELECT finished.*,
      row_number() OVER newest AS "rank",
      count(*) FILTER (WHERE finished."status" = 'FAIL') OVER newest AS "failures"
    FROM (
      SELECT "runKey" COLLATE "C" AS "runKey", "status"::text AS "status",
        CASE WHEN "status" = 'FAIL' THEN left("data"->'error'->>'message', 500) END AS "errorMessage",
        CASE WHEN "status" = 'FAIL' THEN "data"->>'outcome' END AS "outcome"
      FROM ${table}
      WHERE "code" = wanted."code" AND "type" = 'SCHEDULE' AND "runKey" COLLATE "C" >= '0' AND "runKey" COLLATE "C" < ':'
        AND "status" <> 'RUNNING'
      ORDER BY "runKey" COLLATE "C" DESC
      LIMIT 10
    ) AS finished
    WINDOW newest AS (ORDER BY finished."runKey" DESC ROWS UNBOUNDED PRECEDING)
  ) AS ranked
) AS state`.trim();

  // The oldest recorded occurrence: one forward probe of IDX_job_scheduler_code_run_key within the
  // keys that start with a digit after the prefix (':' sorts right after '9').
  const firstOccurrenceText = `
SELECT "runKey" FROM ${table}
WHERE "code" = $1 AND "type" = 'SCHEDULE'
  AND "runKey" COLLATE "C" >= ($2::text || '0') COLLATE "C" AND "runKey" COLLATE "C" < ($2::text || ':') COLLATE "C"
ORDER BY "runKey" COLLATE "C"
LIMIT 1`.trim();

  return {
    latestScheduledRunKeys: (codes, status, before = UNBOUNDED) => ({
      text: status === 'SUCCESS' ? latestSucceededRunKeysText : latestScheduledRunKeysText,
      values: [codes, before],
      operation: 'history',
    }),
    latestRunKeysByPrefix: (codes, prefixes, before = UNBOUNDED) => ({
      text: latestRunKeysByPrefixText,
      values: [codes, prefixes, before],
      operation: 'history',
    }),
    scheduledRunKeysBetween: (code, from, to) => ({ text: scheduledRunKeysBetweenText, values: [code, from, to], operation: 'history' }),
    occurrencesBetween: (code, from, to, limit) => ({ text: occurrencesBetweenText, values: [code, from, to, limit], operation: 'inspect' }),
    scheduleOccurrencesBetween: (code, prefix, from, to, limit) => ({
      text: scheduleOccurrencesBetweenText,
      values: [code, from, to, limit, prefix],
      operation: 'inspect',
    }),
    latestOccurrences: (codes) => ({ text: latestOccurrencesText, values: [codes], operation: 'inspect' }),
    healthWindows: (codes, prefixes, limit, dayFrom) => ({ text: healthWindowsText, values: [codes, limit, dayFrom, prefixes], operation: 'inspect' }),
    healthStates: (codes) => ({ text: healthStatesText, values: [codes], operation: 'inspect' }),
    firstOccurrence: (code, prefix) => ({ text: firstOccurrenceText, values: [code, prefix], operation: 'inspect' }),
  };
};
