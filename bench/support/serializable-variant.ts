import type { DatabaseError } from 'pg';
import type { LeaseVariant } from './lease-node';
import { acquireParameters, BASELINE_STATEMENTS, LIBRARY_STATEMENTS, rawQuery, startRawPool, type WonRun } from './raw-variants';
import { preparedStatementName } from './statement-names';

/** What the serializable variant's nodes did: acquires asked, transactions retried on 40001, and acquires that gave up. */
export interface RetryCounts {
  acquires: number;
  retries: number;
  gaveUp: number;
}

/** Attempts of one acquire before it gives up (reported: a give-up is a lost acquire, never a double). */
const MAX_ATTEMPTS = 20;
const SERIALIZATION_FAILURE = '40001';

/**
 * The acquire as a database that refuses the one-statement form (CockroachDB: 0A000 for two
 * modifications of one table in one statement) runs it: BEGIN ISOLATION LEVEL SERIALIZABLE; the
 * claim (INSERT ... ON CONFLICT DO NOTHING); when it inserted nothing, the reclaim (UPDATE ...
 * WHERE expired or FAIL); COMMIT. A transaction that fails with 40001 is rolled back and run
 * again at once, as CockroachDB's client-side retry loop does. Named prepared statements on a
 * `pg` pool of its own; the winner's complete is the library's, autocommitted.
 */
export const serializableTwoStatementVariant = (counts: RetryCounts): LeaseVariant => ({
  name: 'serializable-2-statement',
  description:
    'raw pg: claim INSERT ... ON CONFLICT DO NOTHING, then reclaim UPDATE, in one SERIALIZABLE transaction retried at once on 40001 (the form CockroachDB accepts); named prepared statements',
  start: async (context) => {
    const pool = startRawPool(context);
    const query = rawQuery(pool, true);
    return {
      acquire: async (code, runKey) => {
        const parameters = acquireParameters(context.nodeId, code, runKey);
        const claim = BASELINE_STATEMENTS.claim(parameters);
        const reclaim = BASELINE_STATEMENTS.reclaim(parameters);
        counts.acquires++;
        let won: WonRun | undefined;
        for (let attempt = 1; ; attempt++) {
          const client = await pool.connect();
          let failure: Error | undefined;
          try {
            await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
            won =
              (await client.query<WonRun>({ name: preparedStatementName(claim.text), text: claim.text, values: claim.values })).rows[0] ??
              (await client.query<WonRun>({ name: preparedStatementName(reclaim.text), text: reclaim.text, values: reclaim.values })).rows[0];
            await client.query('COMMIT');
            break;
          } catch (error) {
            failure = error as Error;
            try {
              await client.query('ROLLBACK');
              failure = undefined;
            } catch {
              // The connection is broken: released as failed below, and the error is thrown.
            }
            if ((error as DatabaseError).code !== SERIALIZATION_FAILURE) throw error;
            if (attempt >= MAX_ATTEMPTS) {
              counts.gaveUp++;
              won = undefined;
              break;
            }
            counts.retries++;
          } finally {
            client.release(failure);
          }
        }
        const run = won;
        if (!run) return undefined;
        return { complete: async () => (await query(LIBRARY_STATEMENTS.complete(run.id, parameters.ownerToken, null))).length === 1 };
      },
    };
  },
});
