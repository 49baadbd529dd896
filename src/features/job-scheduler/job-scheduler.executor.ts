import { createHash } from 'node:crypto';
import type { Pool, PoolClient, QueryConfig } from 'pg';
import { toLeaseDatabaseError, REDACTED } from './driver-error';
import { databaseErrors, JobLeaseDatabaseError } from './job-scheduler.errors';
import { qualifiedTableName, type SqlStatement } from './job-scheduler.sql';
import { createJobSchedulerStatements, type JobSchedulerStatements } from './job-scheduler.statements';
import { DEFAULT_STATEMENT_TIMEOUT_MS, monotonicNow } from './run/lease-deadline';
import { type JobSchedulerDatabase, type LeaseDatabase, leaseDatabaseOf } from './lease-database';
import { requestCancel } from './query-cancel';

export interface ExecutorOptions {
  /**
   * Send named prepared statements (default true): each connection parses and plans a statement
   * once, then only binds it (1.5x to 1.8x the cycles/s of unnamed statements here). Behind
   * PgBouncer in transaction pooling (before 1.21, or without max_prepared_statements) a name
   * prepared on one server connection is unknown on the next: set false there. If the server
   * says so anyway (SQLSTATE 26000 or 42P05, before anything ran), the executor retries that
   * statement unnamed, warns once, and sends unnamed statements from then on.
   */
  preparedStatements?: boolean;
  onPreparedStatementsOff?: (reason: string) => void;
  /** Called once when the expiry table cannot be read (migration not run, no SELECT). */
  onExpiryTableUnavailable?: (reason: string) => void;
  /** Called once when the acquire function cannot be called (migration not run, no EXECUTE). */
  onFunctionUnavailable?: (reason: string) => void;
  /** The bound on one lease statement, pool checkout included (default 5 s). */
  statementTimeoutMs?: number;
}

/** Operators' statements (prune batches, inspection pages) may scan: they get a longer bound. */
const OPERATOR_STATEMENT_TIMEOUT_MS = 60_000;

/** "prepared statement does not exist" / "already exists": raised before the statement runs. */
const PREPARED_STATEMENT_MISMATCH = new Set(['26000', '42P05']);

/**
 * "cached plan must not change result type": a named statement prepared on a connection before a
 * migration changed the type of a column it returns. Raised before the statement runs; an
 * unnamed statement is planned afresh.
 */
const STALE_PLAN = '0A000';

/**
 * The function could not be called: undefined_function (its migration has not run) or
 * insufficient_privilege (no EXECUTE on it, or none on what it reads: then the statement itself
 * fails the same way and that error is thrown). Nothing ran: the statement is sent instead.
 */
const FUNCTION_UNAVAILABLE = new Set(['42883', '42501']);

/**
 * A statement that reads the expiry table could not: undefined_table (the migration
 * TrackJobSchedulerLeaseExpiries1764547200010 has not run) or insufficient_privilege (no SELECT
 * on it; when the role lacks one on the job-scheduler table, the text without it fails the same
 * way and that error is thrown). Raised before the statement runs; its text without the table
 * (`withoutExpiryTable`) is sent instead, from then on.
 */
const EXPIRY_TABLE_UNAVAILABLE = new Set(['42P01', '42501']);

const sqlStateOf = (error: unknown): unknown => (error as { code?: unknown } | null)?.code;

/** The server's error is about the expiry table ("job-scheduler_lease_expiry", or `<table>_lease_expiry`). */
const expiryTableUnavailable = (error: unknown): boolean => {
  const code = sqlStateOf(error);
  return typeof code === 'string' && EXPIRY_TABLE_UNAVAILABLE.has(code) && String((error as { message?: unknown }).message).includes('_lease_expiry');
};

/** The statement's values as logs show them: the owner token redacted. */
const loggedValues = ({ values, secret }: SqlStatement): unknown[] =>
  secret === undefined ? values : values.map((value) => (value === secret ? REDACTED : value));

/**
 * Runs the lease's statements on the DataSource's own `pg` pool (no TypeORM QueryRunner per
 * statement: one checkout, one round trip), or on a pool given directly, on the table found from
 * the entity metadata (its schema included) or `job-scheduler` on the search_path.
 *
 * Every statement is bounded: the checkout and the answer together must come within its timeout,
 * or it fails with a retryable JobLeaseDatabaseError (the connection is then discarded; the
 * server may still apply the statement, which every lease statement tolerates: see README,
 * "Failover"). The bound is client-side, so it holds behind PgBouncer too. Driver errors leave as
 * JobLeaseDatabaseError without parameters; the DataSource's logger sees each statement with the
 * owner token redacted.
 */
export class JobSchedulerExecutor {
  readonly statements: JobSchedulerStatements;
  readonly statementTimeoutMs: number;
  private readonly names = new Map<string, string>();
  private readonly database: LeaseDatabase;
  private prepared: boolean;
  /** False once the server could not call a statement's function: statements are sent themselves. */
  private functionsAvailable = true;
  /** False once the server reported the expiry table missing: its statements are sent without it. */
  private expiryTableAvailable = true;

  constructor(
    source: JobSchedulerDatabase,
    private readonly options: ExecutorOptions = {},
  ) {
    this.database = leaseDatabaseOf(source);
    this.prepared = options.preparedStatements ?? true;
    this.statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
    const { tableName, schema } = this.database;
    this.statements = createJobSchedulerStatements(
      qualifiedTableName(tableName, schema),
      qualifiedTableName(`${tableName}_fencingToken_seq`, schema),
      qualifiedTableName(`${tableName}_lease_expiry`, schema),
      qualifiedTableName(`${tableName}_acquire`, schema),
    );
  }

  /** The pool the statements run on; undefined while not initialized (or destroyed). */
  get currentPool(): Pool | undefined {
    return this.database.pool();
  }

  /** The lease table's name, unqualified (the library's other tables are named after it or beside it). */
  get leaseTableName(): string {
    return this.database.tableName;
  }

  /** Another table (or sequence) of the library, in the schema of the lease's table. */
  tableNamed(name: string): string {
    return qualifiedTableName(name, this.database.schema);
  }

  /**
   * Runs one statement within `timeoutMs` (default: the lease statement bound, or a minute for
   * operators' statements). Throws JobLeaseDatabaseError.
   *
   * Named (prepared) by default. Unnamed statements go through the statement's function when it
   * has one (its plan is cached on the server). A named statement whose cached plan a migration
   * made stale (0A000) is sent once more unnamed, planned afresh; its connection, like any that
   * failed, is discarded, and with it the stale statement. A statement that reads the expiry table
   * where it cannot (42P01 before migration 0010, 42501 without SELECT on it) is sent without it,
   * from then on.
   */
  async rows<Row = Record<string, unknown>>(statement: SqlStatement, timeoutMs?: number): Promise<Row[]> {
    const { withoutExpiryTable } = statement;
    if (withoutExpiryTable === undefined) return this.run<Row>(statement, timeoutMs);
    if (!this.expiryTableAvailable) return this.run<Row>({ ...statement, text: withoutExpiryTable }, timeoutMs);
    try {
      return await this.run<Row>(statement, timeoutMs, true);
    } catch (error) {
      if (!expiryTableUnavailable(error)) throw error;
      const code = sqlStateOf(error) as string;
      const rows = await this.run<Row>({ ...statement, text: withoutExpiryTable }, timeoutMs);
      if (this.expiryTableAvailable) {
        this.expiryTableAvailable = false;
        this.options.onExpiryTableUnavailable?.(`SQLSTATE ${code} reading the expiry table (${statement.operation})`);
      }
      return rows;
    }
  }

  /** `rows` for one text; `quietWithoutExpiryTable`: the expiry table's errors leave unwrapped and unlogged (the caller has another text). */
  private async run<Row>(statement: SqlStatement, timeoutMs?: number, quietWithoutExpiryTable = false): Promise<Row[]> {
    const { text, values, operation } = statement;
    const bound = timeoutMs ?? (operation === 'prune' || operation === 'inspect' ? OPERATOR_STATEMENT_TIMEOUT_MS : this.statementTimeoutMs);
    const deadline = monotonicNow() + bound;
    try {
      const pool = this.pool(statement);
      if (!this.prepared || statement.planEachTime) return await this.sendUnnamed<Row>(pool, statement, deadline, bound);
      try {
        return await this.send<Row>(pool, { name: this.nameOf(text), text, values }, statement, deadline, bound);
      } catch (error) {
        const code = sqlStateOf(error);
        if (code === STALE_PLAN) return await this.sendUnnamed<Row>(pool, statement, deadline, bound);
        if (typeof code !== 'string' || !PREPARED_STATEMENT_MISMATCH.has(code)) throw error;
        this.prepared = false;
        this.options.onPreparedStatementsOff?.(`the server reported SQLSTATE ${code} for a named prepared statement`);
        return await this.sendUnnamed<Row>(pool, statement, deadline, bound);
      }
    } catch (error) {
      if (quietWithoutExpiryTable && expiryTableUnavailable(error)) throw error;
      const wrapped = error instanceof JobLeaseDatabaseError ? error : toLeaseDatabaseError(error, operation, statement.secret);
      this.database.logQueryError(wrapped, text, loggedValues(statement));
      throw wrapped;
    }
  }

  /**
   * An unnamed statement: through its function while the server has it, else the statement
   * itself. A function the server cannot call (SQLSTATE 42883 or 42501, before anything ran) is
   * not tried again once the statement itself has succeeded in its place.
   */
  private async sendUnnamed<Row>(pool: Pool, statement: SqlStatement, deadline: number, bound: number): Promise<Row[]> {
    const { text, values, viaFunction } = statement;
    if (viaFunction === undefined || !this.functionsAvailable) return this.send<Row>(pool, { text, values }, statement, deadline, bound);
    try {
      return await this.send<Row>(pool, { text: viaFunction, values }, statement, deadline, bound);
    } catch (error) {
      const code = sqlStateOf(error);
      if (typeof code !== 'string' || !FUNCTION_UNAVAILABLE.has(code)) throw error;
      const rows = await this.send<Row>(pool, { text, values }, statement, deadline, bound);
      if (this.functionsAvailable) {
        this.functionsAvailable = false;
        this.options.onFunctionUnavailable?.(`SQLSTATE ${code} calling the ${statement.operation} function`);
      }
      return rows;
    }
  }

  /**
   * One checkout and one round trip, both before `deadline` (monotonic). A connection that failed
   * is discarded; one whose answer did not come in time also gets a cancel request, so that the
   * statement stops waiting on the server (behind a lock, say) instead of piling up there.
   */
  private async send<Row>(pool: Pool, query: QueryConfig, statement: SqlStatement, deadline: number, bound: number): Promise<Row[]> {
    // The DataSource's logger sees what is sent: each attempt, the function call when it is one.
    this.database.logQuery(query.text, loggedValues(statement));
    const client = await this.checkout(pool, statement, Math.max(1, Math.floor(deadline - monotonicNow())), bound);
    const remaining = Math.max(1, Math.floor(deadline - monotonicNow()));
    let failure: Error | undefined;
    try {
      const result = await client.query({ ...query, query_timeout: remaining } as QueryConfig);
      return result.rows as Row[];
    } catch (error) {
      failure = error instanceof Error ? error : new Error(String(error));
      if (failure.message === 'Query read timeout') {
        requestCancel(client);
        throw databaseErrors.timedOut(statement.operation, bound, 'answer');
      }
      throw error;
    } finally {
      client.release(failure);
    }
  }

  /** A pool connection within `timeoutMs`; one that arrives later goes straight back to the pool. */
  private checkout(pool: Pool, statement: SqlStatement, timeoutMs: number, bound: number): Promise<PoolClient> {
    return new Promise((resolve, reject) => {
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        reject(databaseErrors.timedOut(statement.operation, bound, 'connection'));
      }, timeoutMs);
      pool.connect().then(
        (client) => {
          if (late) {
            client.release();
            return;
          }
          clearTimeout(timer);
          resolve(client);
        },
        (error: unknown) => {
          clearTimeout(timer);
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the driver's own error, passed on as it came
          if (!late) reject(error);
        },
      );
    });
  }

  /** The DataSource's pg pool (the primary's, when replication is configured). */
  private pool(statement: SqlStatement): Pool {
    const pool = this.database.pool();
    if (!pool) throw databaseErrors.notInitialized(statement.operation);
    return pool;
  }

  private nameOf(text: string): string {
    let name = this.names.get(text);
    if (name === undefined) {
      name = `sdcorejs_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      this.names.set(text, name);
    }
    return name;
  }
}
