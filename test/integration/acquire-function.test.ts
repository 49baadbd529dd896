import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { AddJobSchedulerAcquireFunction1764547200005, JobRunsInspector, JobSchedulerMigrations, JobSchedulerService } from '../../src/features';
import { captureNestLogs } from '../support/nest-log-capture';
import { StatementCounter } from '../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * With preparedStatements: false (the PgBouncer setting), acquire calls the function migration
 * 1764547200005 installs, whose plan PostgreSQL keeps per session; the statement itself while
 * the migration has not run. And a named statement made stale by a migration is retried afresh.
 */
const databases: TestDatabase[] = [];
const sources: DataSource[] = [];
afterAll(async () => {
  await Promise.all(sources.map((source) => source.destroy().catch(() => undefined)));
  await Promise.all(databases.map((database) => database.drop()));
});

const fresh = async (migrate = true): Promise<TestDatabase> => {
  const database = await createTestDatabase({ migrate });
  databases.push(database);
  return database;
};

/** A service on a DataSource of its own (one connection) whose statements `counter` records. */
const counted = async (database: TestDatabase, options: { preparedStatements: boolean; schema?: string }) => {
  const counter = new StatementCounter();
  const dataSource = await database.dataSource({ logger: counter, logging: true, poolSize: 1, ...(options.schema ? { schema: options.schema } : {}) });
  sources.push(dataSource);
  const jobs = new JobSchedulerService(dataSource, { preparedStatements: options.preparedStatements });
  return { counter, dataSource, jobs };
};

const FUNCTION_CALL = /^SELECT \* FROM "job-scheduler_acquire"\(\$1, \$2, \$3, \$4, \$5, \$6, \$7, \$8, \$9\)$/;
const INLINE_ACQUIRE = /^WITH inserted AS \(/;

const sequenceValue = async (database: TestDatabase, schema = 'public'): Promise<string> =>
  (await database.sql<{ value: string }>(`SELECT last_value::text AS value FROM "${schema}"."job-scheduler_fencingToken_seq"`))[0].value;

describe('acquire through "job-scheduler_acquire" (preparedStatements: false)', () => {
  it('is installed by the migrations as a SECURITY INVOKER function and called by unnamed acquires, one statement each', async () => {
    const database = await fresh();
    const [installed] = await database.sql<{ definer: boolean; volatility: string; language: string }>(
      `SELECT p.prosecdef AS definer, p.provolatile AS volatility, l.lanname AS language
       FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.proname = 'job-scheduler_acquire'`,
    );
    expect(installed).toEqual({ definer: false, volatility: 'v', language: 'plpgsql' });

    const { counter, jobs } = await counted(database, { preparedStatements: false });
    const run = { code: 'through-function', runKey: 'r1', leaseMs: 60_000 };
    const first = await jobs.acquire(run);
    expect(first).toMatchObject({ acquired: true, attempt: 1, reclaimed: false });
    if (!first.acquired) throw new Error('expected to acquire');

    // A loser: nothing written, no fencing token drawn.
    const tokensBefore = await sequenceValue(database);
    const [rowBefore] = await database.sql<{ xmin: string }>(`SELECT xmin::text FROM "job-scheduler" WHERE id = $1`, [first.id]);
    expect(await jobs.acquire(run)).toEqual({ acquired: false });
    expect(await sequenceValue(database)).toBe(tokensBefore);
    expect(await database.sql(`SELECT xmin::text FROM "job-scheduler" WHERE id = $1`, [first.id])).toEqual([rowBefore]);

    // A FAIL row is reclaimed (attempt 2, a newer fencing token); SUCCESS is final.
    expect(await jobs.release(first)).toBe(true);
    const second = await jobs.acquire(run);
    expect(second).toMatchObject({ acquired: true, attempt: 2, reclaimed: true, id: first.id });
    if (!second.acquired) throw new Error('expected to reclaim');
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);

    // An expired RUNNING row, by the database clock: its holder last wrote two leases ago.
    await database.sql(`UPDATE "job-scheduler" SET "modifiedAt" = CURRENT_TIMESTAMP - interval '2 minutes' WHERE id = $1`, [first.id]);
    const third = await jobs.acquire(run);
    expect(third).toMatchObject({ acquired: true, attempt: 3, reclaimed: true });
    if (!third.acquired) throw new Error('expected to take the expired lease over');
    expect(third.fencingToken).toBeGreaterThan(second.fencingToken);
    const [row] = await database.sql<{ lastError: { expired: boolean } }>(`SELECT "lastError" FROM "job-scheduler" WHERE id = $1`, [first.id]);
    expect(row.lastError).toMatchObject({ expired: true });
    expect(await jobs.complete(third)).toBe(true);
    expect(await jobs.acquire(run)).toEqual({ acquired: false });

    const acquires = counter.statements.filter((text) => FUNCTION_CALL.test(text) || INLINE_ACQUIRE.test(text));
    expect(acquires).toHaveLength(5);
    expect(acquires.every((text) => FUNCTION_CALL.test(text))).toBe(true);
  });

  it('sends the statement itself while the migration has not run: one warning, then no further attempt at the function', async () => {
    const database = await fresh();
    const migrator = await database.dataSource({ poolSize: 1 });
    const queryRunner = migrator.createQueryRunner();
    await new AddJobSchedulerAcquireFunction1764547200005().down(queryRunner);
    await queryRunner.release();
    await migrator.destroy();
    expect(await database.sql(`SELECT 1 FROM pg_proc WHERE proname = 'job-scheduler_acquire'`)).toEqual([]);

    const { counter, jobs } = await counted(database, { preparedStatements: false });
    const results = await captureNestLogs(async (lines) => {
      const won = await jobs.acquire({ code: 'no-function', runKey: 'r1' });
      const lost = await jobs.acquire({ code: 'no-function', runKey: 'r1' });
      const other = await jobs.acquire({ code: 'no-function', runKey: 'r2' });
      const warnings = lines.filter((line) => line.level === 'warn').map((line) => line.message);
      return { won, lost, other, warnings };
    });
    expect(results.won).toMatchObject({ acquired: true, attempt: 1 });
    expect(results.lost).toEqual({ acquired: false });
    expect(results.other).toMatchObject({ acquired: true });
    expect(results.warnings).toEqual([
      expect.stringMatching(/^Sending the acquire statement itself from now on: SQLSTATE 42883 .*AddJobSchedulerAcquireFunction1764547200005/),
    ]);
    const acquires = counter.statements.filter((text) => FUNCTION_CALL.test(text) || INLINE_ACQUIRE.test(text));
    expect(acquires.map((text) => (FUNCTION_CALL.test(text) ? 'function' : 'statement'))).toEqual(['function', 'statement', 'statement', 'statement']);
  });

  it('lives in the DataSource schema and is called there', async () => {
    const database = await fresh(false);
    await database.sql('CREATE SCHEMA "lease ops"');
    const migrator = await database.dataSource({ schema: 'lease ops', migrations: [...JobSchedulerMigrations], poolSize: 1 });
    await migrator.runMigrations();
    await migrator.destroy();
    expect(
      await database.sql(`SELECT n.nspname AS schema FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.proname = 'job-scheduler_acquire'`),
    ).toEqual([{ schema: 'lease ops' }]);

    const { counter, jobs } = await counted(database, { preparedStatements: false, schema: 'lease ops' });
    const lock = await jobs.acquire({ code: 'schema', runKey: 'r1' });
    expect(lock).toMatchObject({ acquired: true, fencingToken: 1 });
    expect(await jobs.acquire({ code: 'schema', runKey: 'r1' })).toEqual({ acquired: false });
    expect(await sequenceValue(database, 'lease ops')).toBe('1');
    const calls = counter.statements.filter((text) => text.includes('job-scheduler_acquire'));
    expect(calls).toEqual([
      'SELECT * FROM "lease ops"."job-scheduler_acquire"($1, $2, $3, $4, $5, $6, $7, $8, $9)',
      'SELECT * FROM "lease ops"."job-scheduler_acquire"($1, $2, $3, $4, $5, $6, $7, $8, $9)',
    ]);
  });

  it('keeps the owner token out of errors raised inside the function', async () => {
    const database = await fresh();
    const { jobs } = await counted(database, { preparedStatements: false });
    // The table refuses every write: the error comes from inside the function, while the token is bound.
    await database.sql(`ALTER TABLE "job-scheduler" ADD CONSTRAINT "refuse_all" CHECK ("code" = 'never') NOT VALID`);
    const error = await jobs.acquire({ code: 'refused', runKey: 'r1' }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toMatchObject({ name: 'JobLeaseDatabaseError', sqlState: '23514' });
    // The server's detail quotes the failing row, owner token included: none of it may surface.
    const texts: string[] = [];
    for (let link: unknown = error; link instanceof Error; link = link.cause) {
      for (const key of Object.getOwnPropertyNames(link)) {
        const value = (link as unknown as Record<string, unknown>)[key];
        if (typeof value === 'string') texts.push(value);
      }
    }
    expect(texts.join('\n')).toContain('refuse_all');
    expect(texts.join('\n')).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
  });
});

describe('a named statement whose cached plan a migration made stale (0A000)', () => {
  it('is sent once more unnamed, planned afresh, and succeeds', async () => {
    const database = await fresh();
    // The premise, with pg itself: a statement prepared before the ALTER fails after it.
    const raw = new Client({ connectionString: database.url });
    await raw.connect();
    const readOwner = { name: 'read_owner', text: 'SELECT "ownerId" FROM "job-scheduler" LIMIT 1' };
    await raw.query(readOwner);

    const { counter, dataSource, jobs } = await counted(database, { preparedStatements: true });
    const inspector = new JobRunsInspector(dataSource, { preparedStatements: true });
    const lock = await jobs.acquire({ code: 'stale-plan', runKey: 'r1' });
    expect(lock.acquired).toBe(true);
    // Prepared on the DataSource's one pooled connection.
    expect(await inspector.getRun({ code: 'stale-plan', runKey: 'r1' })).toMatchObject({ ownerId: jobs.ownerId, status: 'RUNNING' });

    // A migration-like statement from another connection widens a column the statement returns.
    await database.sql(`ALTER TABLE "job-scheduler" ALTER COLUMN "ownerId" TYPE varchar(512)`);
    await expect(raw.query(readOwner)).rejects.toMatchObject({ code: '0A000' });
    await raw.end();

    counter.reset();
    expect(await inspector.getRun({ code: 'stale-plan', runKey: 'r1' })).toMatchObject({ ownerId: jobs.ownerId, status: 'RUNNING' });
    // The named attempt, then the unnamed retry.
    expect(counter.count).toBe(2);
    counter.reset();
    // The stale statement went with its connection: the next call prepares afresh, once.
    expect(await inspector.getRun({ code: 'stale-plan', runKey: 'r1' })).toMatchObject({ ownerId: jobs.ownerId });
    expect(counter.count).toBe(1);
    if (lock.acquired) expect(await jobs.complete(lock)).toBe(true);
  });
});
