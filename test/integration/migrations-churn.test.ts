import {
  JOB_SCHEDULER_CREATED_AT_INDEX,
  JOB_SCHEDULER_STORAGE_PARAMETERS,
  TuneJobSchedulerTableForChurn1764547200004,
} from '../../migrations/1764547200004-TuneJobSchedulerTableForChurn';
import { JOB_SCHEDULER_FILLFACTOR } from '../../migrations/1764547200010-TrackJobSchedulerLeaseExpiries';
import { JobSchedulerMigrations, JobSchedulerService } from '../../src/features';
import { freshDatabasePerTest, type TestDatabase } from '../support/test-database';

const fresh = freshDatabasePerTest();

const CHURN_PARAMETERS = JOB_SCHEDULER_STORAGE_PARAMETERS.map(([name, value]) => `${name}=${value}`);
/** What every migration leaves: 0010 lowers 0004's fillfactor (room for batched completes to be HOT). */
const SHIPPED_PARAMETERS = CHURN_PARAMETERS.map((option) => (option === 'fillfactor=95' ? `fillfactor=${JOB_SCHEDULER_FILLFACTOR}` : option));

const storageParameters = async (database: TestDatabase, table = '"job-scheduler"') => {
  const [row] = await database.sql<{ reloptions: string[] | null }>(`SELECT reloptions FROM pg_class WHERE oid = $1::regclass`, [table]);
  return row.reloptions ?? [];
};

/** The "createdAt" index as the catalog has it, or undefined. */
const createdAtIndex = async (database: TestDatabase) => {
  const [index] = await database.sql<{ oid: number; valid: boolean; definition: string }>(
    `SELECT c.oid::int AS oid, i.indisvalid AS valid, pg_get_indexdef(c.oid) AS definition
     FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = $1`,
    [JOB_SCHEDULER_CREATED_AT_INDEX],
  );
  return index;
};

/** Where the churn migration is in the list: later ones are reverted before it. */
const CHURN_MIGRATION = JobSchedulerMigrations.indexOf(TuneJobSchedulerTableForChurn1764547200004);

/** Runs the migrations (all, or the first `count`), or reverts them down to and including the churn one. */
const migrations = async (database: TestDatabase, step: 'up' | 'down', count: number = JobSchedulerMigrations.length, schema?: string) => {
  const dataSource = await database.dataSource({ migrations: JobSchedulerMigrations.slice(0, count), poolSize: 1, ...(schema ? { schema } : {}) });
  try {
    if (step === 'up') await dataSource.runMigrations();
    else for (let applied = count; applied > CHURN_MIGRATION; applied--) await dataSource.undoLastMigration();
  } finally {
    await dataSource.destroy();
  }
};

describe('migration TuneJobSchedulerTableForChurn', () => {
  it('sets fillfactor and autovacuum, adds the "createdAt" index, and takes them back on revert', async () => {
    const database = await fresh(true);
    expect((await storageParameters(database)).sort()).toEqual([...SHIPPED_PARAMETERS].sort());
    expect(SHIPPED_PARAMETERS).toContain('fillfactor=50');
    expect(CHURN_PARAMETERS).toContain('fillfactor=95');
    expect(await createdAtIndex(database)).toMatchObject({ valid: true, definition: expect.stringContaining('USING btree ("createdAt")') });
    await migrations(database, 'down');
    expect(await storageParameters(database)).toEqual([]);
    expect(await createdAtIndex(database)).toBeUndefined();
    await migrations(database, 'up', CHURN_MIGRATION + 1);
    expect(await storageParameters(database)).toEqual(CHURN_PARAMETERS);
    expect(await createdAtIndex(database)).toMatchObject({ valid: true });
    await migrations(database, 'up');
    expect((await storageParameters(database)).sort()).toEqual([...SHIPPED_PARAMETERS].sort());
  });

  it("keeps an operator's own settings, and does not remove them on revert", async () => {
    const database = await fresh(false);
    await migrations(database, 'up', 4);
    await database.sql(`ALTER TABLE "job-scheduler" SET (fillfactor = 70, autovacuum_vacuum_cost_delay = 1)`);
    await migrations(database, 'up');
    const tuned = await storageParameters(database);
    expect(tuned).toEqual(
      expect.arrayContaining(['fillfactor=70', 'autovacuum_vacuum_cost_delay=1', ...CHURN_PARAMETERS.filter((option) => !option.startsWith('fillfactor='))]),
    );
    expect(tuned).toHaveLength(CHURN_PARAMETERS.length + 1);
    await migrations(database, 'down');
    expect(await storageParameters(database)).toEqual(['fillfactor=70', 'autovacuum_vacuum_cost_delay=1']);
  });

  it('keeps an index built beforehand with CONCURRENTLY, and rebuilds one whose concurrent build failed', async () => {
    const built = await fresh(false);
    await migrations(built, 'up', 4);
    await built.sql(`CREATE INDEX CONCURRENTLY "${JOB_SCHEDULER_CREATED_AT_INDEX}" ON "job-scheduler" ("createdAt")`);
    const before = await createdAtIndex(built);
    await migrations(built, 'up');
    expect(await createdAtIndex(built)).toEqual(before);

    const failed = await fresh(false);
    await migrations(failed, 'up', 4);
    await failed.sql(`INSERT INTO "job-scheduler" ("lockKey", "code", "createdAt") VALUES ('a', 'x', '2026-01-01Z'), ('b', 'x', '2026-01-01Z')`);
    // Two equal values fail a unique build; a failed concurrent build leaves its index behind, invalid.
    await expect(failed.sql(`CREATE UNIQUE INDEX CONCURRENTLY "${JOB_SCHEDULER_CREATED_AT_INDEX}" ON "job-scheduler" ("createdAt")`)).rejects.toMatchObject({
      code: '23505',
    });
    expect(await createdAtIndex(failed)).toMatchObject({ valid: false });
    await migrations(failed, 'up');
    expect(await createdAtIndex(failed)).toMatchObject({ valid: true, definition: expect.stringMatching(/^CREATE INDEX .* USING btree \("createdAt"\)$/) });
  });

  it('tunes the table in the DataSource schema', async () => {
    const database = await fresh(false);
    await database.sql('CREATE SCHEMA "jobs"');
    await migrations(database, 'up', JobSchedulerMigrations.length, 'jobs');
    // The expiry table's triggers find their table in that schema too.
    await database.sql(`INSERT INTO "jobs"."job-scheduler" ("lockKey", code, "leaseMs") VALUES ('k', 'c', 60000)`);
    expect(await database.sql(`SELECT count(*)::int AS n FROM "jobs"."job-scheduler_lease_expiry"`)).toEqual([{ n: 1 }]);
    expect((await storageParameters(database, '"jobs"."job-scheduler"')).sort()).toEqual([...SHIPPED_PARAMETERS].sort());
    expect(await createdAtIndex(database)).toMatchObject({ valid: true, definition: expect.stringContaining('ON jobs."job-scheduler"') });
    await migrations(database, 'down', JobSchedulerMigrations.length, 'jobs');
    expect(await storageParameters(database, '"jobs"."job-scheduler"')).toEqual([]);
    expect(await createdAtIndex(database)).toBeUndefined();
  });

  it('lets prune read only the old rows, by the index, on every call of a connection (no cached generic plan)', async () => {
    const database = await fresh(true);
    // 20,000 runs finished yesterday, 40 finished 40 days ago: prune ('30d') deletes 40.
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", "code", "status", "ownerToken", "runKey", "createdAt", "modifiedAt", "finishedAt")
       SELECT 'k' || i, 'c' || (i % 20), 'SUCCESS', gen_random_uuid(), 'r' || i, at, at, at
       FROM generate_series(1, 20040) AS i
       CROSS JOIN LATERAL (SELECT now() - CASE WHEN i <= 40 THEN interval '40 days' ELSE interval '1 day' END AS at) AS a`,
    );
    await database.sql('VACUUM ANALYZE "job-scheduler"');
    const dataSource = await database.dataSource({ poolSize: 1 });
    const jobs = new JobSchedulerService(dataSource);
    // 8 full batches of 5 and a short one, then 3 passes that find nothing: 12 statements on one
    // connection, past the 5 after which PostgreSQL may switch a prepared statement to a generic plan.
    expect(await jobs.prune({ olderThan: '30d', batchSize: 5 })).toBe(40);
    for (let pass = 0; pass < 3; pass++) expect(await jobs.prune({ olderThan: '30d', batchSize: 5 })).toBe(0);
    // The plan that suits the table now, every time: prune is never a named prepared statement on
    // the connection (whose generic plan, on a large table with ages spread over the heap, is a
    // sequential scan), unlike the lease's statements.
    expect((await jobs.acquire({ code: 'control', runKey: 'r' })).acquired).toBe(true);
    const prepared = (await dataSource.query(`SELECT statement FROM pg_prepared_statements`)) as { statement: string }[];
    expect(prepared.some((row) => row.statement.includes('WITH inserted AS'))).toBe(true);
    expect(prepared.filter((row) => row.statement.includes('WITH doomed AS'))).toEqual([]);
    await dataSource.destroy(); // a backend reports its statistics when it exits
    const scans = async () =>
      (
        await database.sql<{ scans: number }>(`SELECT idx_scan::int AS scans FROM pg_stat_user_indexes WHERE indexrelname = $1`, [
          JOB_SCHEDULER_CREATED_AT_INDEX,
        ])
      )[0].scans;
    let seen = await scans();
    for (let waited = 0; seen < 12 && waited < 10_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      seen = await scans();
    }
    expect(seen).toBe(12);
  });
});
