import type { Client } from 'pg';
import type { AcquireRow, SqlStatement } from '../../src/features/job-scheduler/job-scheduler.sql';
import { acquiredRun, acquireParameters, BASELINE_STATEMENTS, LIBRARY_STATEMENTS } from './raw-variants';
import { freshRunKey } from './run-keys';

/** One statement to time on the server, with fresh values each time it is asked for. */
export interface StatementCase {
  operation: string;
  sql: string;
  next(): SqlStatement;
}

const CODE = 'server-time';

/**
 * The acquire statements of the library and of the baselines, as a winner (a fresh run) and as
 * a loser (a run another owner holds RUNNING), and the heartbeat. Takes the held run on `client`.
 */
export const statementCases = async (client: Client): Promise<StatementCase[]> => {
  const held = acquireParameters('holder', CODE, freshRunKey(CODE));
  const row = acquiredRun((await client.query<AcquireRow>(LIBRARY_STATEMENTS.acquire(held))).rows);
  if (!row) throw new Error('server-time: the held run was not acquired');
  const loser = () => acquireParameters('loser', CODE, held.runKey ?? '');
  const winner = () => acquireParameters('winner', CODE, freshRunKey(CODE));
  return [
    { operation: 'acquire (winner)', sql: 'library (CTE)', next: () => LIBRARY_STATEMENTS.acquire(winner()) },
    { operation: 'acquire (winner)', sql: 'two-statement: insert', next: () => BASELINE_STATEMENTS.claim(winner()) },
    { operation: 'acquire (loser)', sql: 'library (CTE)', next: () => LIBRARY_STATEMENTS.acquire(loser()) },
    { operation: 'acquire (loser)', sql: 'two-statement: insert', next: () => BASELINE_STATEMENTS.claim(loser()) },
    { operation: 'acquire (loser)', sql: 'two-statement: reclaim', next: () => BASELINE_STATEMENTS.reclaim(loser()) },
    { operation: 'acquire (loser)', sql: 'do-update', next: () => BASELINE_STATEMENTS.upsert(loser()) },
    { operation: 'heartbeat', sql: 'library', next: () => LIBRARY_STATEMENTS.heartbeat(row.id, held.ownerToken) },
  ];
};
