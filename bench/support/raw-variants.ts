import { randomUUID } from 'node:crypto';
import { Pool, type QueryResultRow } from 'pg';
import { JOB_SCHEDULER_TABLE, JobSchedulerType } from '../../src/features/job-scheduler/job-scheduler.entity';
import { buildLockKey } from '../../src/features/job-scheduler/job-identity';
import { type AcquireParameters, type AcquireRow, qualifiedTableName, type SqlStatement } from '../../src/features/job-scheduler/job-scheduler.sql';
import { createJobSchedulerStatements } from '../../src/features/job-scheduler/job-scheduler.statements';
import { createBaselineStatements } from './baseline-statements';
import { BENCH_LEASE_MS, type LeaseVariant, type NodeContext } from './lease-node';
import { preparedStatementName } from './statement-names';

/** The library's own statements, for the raw `pg` variants (acquire's function from the migrations). */
export const LIBRARY_STATEMENTS = createJobSchedulerStatements(
  qualifiedTableName(JOB_SCHEDULER_TABLE),
  qualifiedTableName(`${JOB_SCHEDULER_TABLE}_fencingToken_seq`),
  qualifiedTableName(`${JOB_SCHEDULER_TABLE}_lease_expiry`),
  qualifiedTableName(`${JOB_SCHEDULER_TABLE}_acquire`),
);
/** The baselines' statements on the same table. */
export const BASELINE_STATEMENTS = createBaselineStatements(qualifiedTableName(JOB_SCHEDULER_TABLE));

export type RawQuery = <Row extends QueryResultRow = QueryResultRow>(statement: SqlStatement) => Promise<Row[]>;

/** A `pg` pool of the node's own, ended when the scenario ends. */
export const startRawPool = (context: NodeContext): Pool => {
  const pool = new Pool({ connectionString: context.url, max: context.poolSize });
  // An idle connection that breaks is dropped by the pool; the next query reports the problem.
  pool.on('error', () => undefined);
  return context.cleanup.add(pool, (started) => started.end());
};

/** Sends statements on `pool`, as named prepared statements when `prepared`. */
export const rawQuery =
  (pool: Pool, prepared: boolean): RawQuery =>
  async <Row extends QueryResultRow>(statement: SqlStatement) =>
    (prepared
      ? await pool.query<Row>({ name: preparedStatementName(statement.text), text: statement.text, values: statement.values })
      : await pool.query<Row>(statement.text, statement.values)
    ).rows;

/** The values the library binds for an acquire, computed the way it computes them. */
export const acquireParameters = (ownerId: string, code: string, runKey: string): AcquireParameters => ({
  lockKey: buildLockKey(JobSchedulerType.SCHEDULE, code, runKey),
  code,
  name: null,
  type: JobSchedulerType.SCHEDULE,
  ownerToken: randomUUID(),
  runKey,
  leaseMs: BENCH_LEASE_MS,
  ownerId,
  reclaimFailed: true,
});

/** The row of a run this node won. */
export interface WonRun {
  id: string;
}

/** How a raw variant turns acquire parameters into the run it won (or none). */
export type AcquireAlgorithm = (query: RawQuery, parameters: AcquireParameters) => Promise<WonRun | undefined>;

/**
 * The library's acquire: one row when acquired; for a loser, a row with a null id and the status
 * it lost to (or none at all when a concurrent insert is not visible yet).
 */
export const acquiredRun = (rows: readonly AcquireRow[]): WonRun | undefined => {
  const id = rows[0]?.id;
  return typeof id === 'string' ? { id } : undefined;
};

export const rawVariant = (name: string, description: string, prepared: boolean, algorithm: AcquireAlgorithm): LeaseVariant => ({
  name,
  description,
  start: async (context) => {
    const query = rawQuery(startRawPool(context), prepared);
    return {
      acquire: async (code, runKey) => {
        const parameters = acquireParameters(context.nodeId, code, runKey);
        const row = await algorithm(query, parameters);
        if (!row) return undefined;
        return {
          complete: async () => (await query(LIBRARY_STATEMENTS.complete(row.id, parameters.ownerToken, null))).length === 1,
        };
      },
    };
  },
});

const oneStatement: AcquireAlgorithm = async (query, parameters) => acquiredRun(await query<AcquireRow>(LIBRARY_STATEMENTS.acquire(parameters)));

const twoStatements: AcquireAlgorithm = async (query, parameters) =>
  (await query<WonRun>(BASELINE_STATEMENTS.claim(parameters)))[0] ?? (await query<WonRun>(BASELINE_STATEMENTS.reclaim(parameters)))[0];

const upsert: AcquireAlgorithm = async (query, parameters) => (await query<WonRun>(BASELINE_STATEMENTS.upsert(parameters)))[0];

/** The library's statements on a plain `pg` pool: the limit the library is measured against. */
export const RAW = rawVariant('raw', "raw pg: the library's SQL text, unnamed statements", false, oneStatement);
export const RAW_PREPARED = rawVariant('raw+prepared', "raw pg: the library's SQL text, named prepared statements", true, oneStatement);
export const TWO_STATEMENT = rawVariant(
  'two-statement',
  'raw pg: 1.1 algorithm, INSERT ... ON CONFLICT DO NOTHING, then a separate reclaim UPDATE',
  false,
  twoStatements,
);
export const TWO_STATEMENT_PREPARED = rawVariant('two-statement+prepared', 'raw pg: the 1.1 algorithm with named prepared statements', true, twoStatements);
export const DO_UPDATE = rawVariant('do-update', 'raw pg: one INSERT ... ON CONFLICT DO UPDATE ... WHERE statement', false, upsert);
