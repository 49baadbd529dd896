import { Client } from 'pg';
import type { SqlStatement } from '../../src/features/job-scheduler/job-scheduler.sql';
import type { TestDatabase } from '../../test/support/test-database';
import type { CleanupStack } from './cleanup';
import { interleave } from './interleave';
import type { FigureSheet } from './report';
import { statementCases } from './statement-cases';
import { median } from './statistics';

/** Where the server spends its time on one unnamed statement, in ms. */
export interface ServerStatementTime {
  /** Parse, analyze and rewrite: what a named prepared statement does once per connection. */
  parseMs: number;
  /** Planning (EXPLAIN's "Planning Time"): also skipped once a prepared statement has a generic plan. */
  planningMs: number;
  /** Execution (EXPLAIN ANALYZE's "Execution Time"), commit excluded. */
  executionMs: number;
}

const PARSE_FUNCTION = `
CREATE OR REPLACE FUNCTION pg_temp.bench_parse_ms(statement text, iterations int) RETURNS float8
LANGUAGE plpgsql AS $function$
DECLARE started timestamptz := clock_timestamp();
BEGIN
  FOR i IN 1..iterations LOOP
    EXECUTE 'PREPARE bench_parse AS ' || statement;
    DEALLOCATE bench_parse;
  END LOOP;
  RETURN extract(epoch FROM clock_timestamp() - started) * 1000 / iterations;
END $function$`;

interface ExplainOutput {
  'Planning Time': number;
  'Execution Time': number;
}

/** Makes the parse timer available on this connection (a function in pg_temp: gone with the session). */
const installParseTimer = async (client: Client): Promise<void> => {
  await client.query(PARSE_FUNCTION);
};

/**
 * Times one statement on the server: parse + analyze by PREPARE in a loop (no round trips in
 * between), planning and execution by EXPLAIN ANALYZE. `next` gives the statement to run each
 * time (fresh values for a winner). Medians of `samples` runs.
 */
const measureServerStatementTime = async (client: Client, next: () => SqlStatement, samples: number): Promise<ServerStatementTime> => {
  const { rows } = await client.query<{ ms: number }>('SELECT pg_temp.bench_parse_ms($1, $2) AS ms', [next().text, samples]);
  const planning: number[] = [];
  const execution: number[] = [];
  for (let sample = 0; sample < samples; sample++) {
    const statement = next();
    const result = await client.query<{ 'QUERY PLAN': ExplainOutput[] }>(`EXPLAIN (ANALYZE, SUMMARY, FORMAT JSON) ${statement.text}`, statement.values);
    const [output] = result.rows[0]['QUERY PLAN'];
    planning.push(output['Planning Time']);
    execution.push(output['Execution Time']);
  }
  return { parseMs: rows[0].ms, planningMs: median(planning), executionMs: median(execution) };
};

/**
 * Adds, for every statement case, the server's parse + analyze, planning and execution time:
 * what an unnamed statement pays on every call and a named prepared one (almost) never.
 */
export const addServerStatementTimes = async (
  database: TestDatabase,
  sizes: { repetitions: number; samples: number },
  cleanup: CleanupStack,
  sheet: FigureSheet,
): Promise<void> => {
  const client = cleanup.add(new Client({ connectionString: database.url }), (connected) => connected.end());
  await client.connect();
  await installParseTimer(client);
  const cases = await statementCases(client);
  const results = await interleave(cases, sizes, (statement) => measureServerStatementTime(client, statement.next, sizes.samples));
  for (const [statement, times] of results) {
    const add = (metric: string, pick: (time: ServerStatementTime) => number) =>
      sheet.add(`server time: ${statement.operation}`, statement.sql, metric, 'ms', times.map(pick));
    add('parse + analyze', (time) => time.parseMs);
    add('planning', (time) => time.planningMs);
    add('execution', (time) => time.executionMs);
  }
};
