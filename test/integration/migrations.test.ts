import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { JobScheduler, JobSchedulerMigrations, JobSchedulerService, JobSchedulerType } from '../../src/features';
import { UpgradeJobSchedulerTableFrom111764547200001 } from '../../migrations/1764547200001-UpgradeJobSchedulerTableFrom11';
import { buildLockKey } from '../../src/features/job-scheduler/job-identity';
import { freshDatabasePerTest, type TestDatabase } from '../support/test-database';
import { MIGRATION_NAMES } from '../support/migration-names';

const fresh = freshDatabasePerTest();

const columnsOf = async (database: TestDatabase) =>
  Object.fromEntries(
    (
      await database.sql<{
        column_name: string;
        data_type: string;
        is_nullable: string;
        column_default: string | null;
        character_maximum_length: number | null;
      }>(
        `SELECT column_name, data_type, is_nullable, column_default, character_maximum_length
         FROM information_schema.columns WHERE table_name = 'job-scheduler'`,
      )
    ).map((column) => [column.column_name, column]),
  );

const migrate = async (database: TestDatabase) => {
  const dataSource = await database.dataSource({ migrations: [...JobSchedulerMigrations], poolSize: 1 });
  const ran = await dataSource.runMigrations();
  await dataSource.destroy();
  return ran.map((migration) => migration.name);
};

/** The table as release 1.1 created it: timestamps without time zone, no 2.0 columns. */
const TABLE_11 = `
CREATE TYPE "job-scheduler_type_enum" AS ENUM ('INITIAL', 'SCHEDULE');
CREATE TYPE "job-scheduler_status_enum" AS ENUM ('RUNNING', 'SUCCESS', 'FAIL');
CREATE TABLE "job-scheduler" (
  "id" uuid NOT NULL DEFAULT gen_random_uuid(),
  "lockKey" character varying(320) NOT NULL,
  "code" character varying(64) NOT NULL,
  "name" character varying(256),
  "type" "job-scheduler_type_enum" NOT NULL DEFAULT 'SCHEDULE',
  "status" "job-scheduler_status_enum" NOT NULL DEFAULT 'RUNNING',
  "ownerToken" uuid NOT NULL,
  "data" jsonb,
  "createdAt" TIMESTAMP NOT NULL DEFAULT now(),
  "modifiedAt" TIMESTAMP NOT NULL DEFAULT now(),
  CONSTRAINT "UQ_3b1c1a5b7f0e2d4c6a8e9f0b1c2" UNIQUE ("lockKey"),
  CONSTRAINT "PK_4d2e3f5a6b7c8d9e0f1a2b3c4d5" PRIMARY KEY ("id")
)`;

/**
 * The table as release 1.0 created it (reconstructed: 1.1's entity less the owner token, which
 * 1.1 added; its lock keys raw `code` or `code:runKey`, see UPGRADING.md).
 */
const TABLE_10 = TABLE_11.replace(`  "ownerToken" uuid NOT NULL,\n`, '');

const upgradingSql = (): string => {
  const match = /## Rewriting 1\.0 keys[\s\S]*?```sql\n([\s\S]*?)```/.exec(readFileSync(join(__dirname, '..', '..', 'UPGRADING.md'), 'utf8'));
  if (!match) throw new Error('UPGRADING.md has no SQL block under "Rewriting 1.0 keys"');
  return match[1];
};

describe('migrations', () => {
  it('create the 2.0 schema from nothing', async () => {
    const database = await fresh(false);
    expect(await migrate(database)).toEqual(MIGRATION_NAMES);
    // The dynamic schedules' table, its version sequence and its indexes.
    const scheduleIndexes = await database.sql<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'job-schedule' ORDER BY 1`);
    expect(scheduleIndexes.map((row) => row.indexname)).toEqual([
      'IDX_job_schedule_handler',
      'IDX_job_schedule_removed_at',
      'IDX_job_schedule_tenant',
      'IDX_job_schedule_version',
      'PK_job_schedule',
    ]);
    expect(await database.sql(`SELECT 1 FROM pg_class WHERE relname = 'job-schedule_version_seq' AND relkind = 'S'`)).toHaveLength(1);
    const columns = await columnsOf(database);
    expect(columns.id).toMatchObject({ data_type: 'uuid', column_default: 'gen_random_uuid()' });
    expect(columns.lockKey).toMatchObject({ data_type: 'character varying', character_maximum_length: 320, is_nullable: 'NO' });
    expect(columns.code).toMatchObject({ character_maximum_length: 64 });
    expect(columns.name).toMatchObject({ character_maximum_length: 256, is_nullable: 'YES' });
    expect(columns.type).toMatchObject({ data_type: 'USER-DEFINED' });
    expect(columns.status).toMatchObject({ data_type: 'USER-DEFINED' });
    expect(columns.ownerToken).toMatchObject({ data_type: 'uuid' });
    expect(columns.data).toMatchObject({ data_type: 'jsonb' });
    for (const column of ['createdAt', 'modifiedAt', 'startedAt', 'finishedAt']) {
      expect(columns[column]).toMatchObject({ data_type: 'timestamp with time zone' });
    }
    expect(columns.fencingToken).toMatchObject({ data_type: 'bigint', column_default: `nextval('"job-scheduler_fencingToken_seq"'::regclass)` });
    expect(columns.runKey).toMatchObject({ character_maximum_length: 1024 });
    const [unique] = await database.sql<{ definition: string }>(
      `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = '"job-scheduler"'::regclass AND contype = 'u'`,
    );
    expect(unique.definition).toBe('UNIQUE ("lockKey")');
    const [index] = await database.sql<{ definition: string }>(
      `SELECT indexdef AS definition FROM pg_indexes WHERE indexname = 'IDX_job_scheduler_code_run_key'`,
    );
    expect(index.definition).toContain('(code, "runKey" COLLATE "C")');
    // The take-over's index of the leases is a table of its own, kept by triggers (0010): none on the table.
    expect(await database.sql(`SELECT indexname FROM pg_indexes WHERE indexname = 'IDX_job_scheduler_running_expiry'`)).toEqual([]);
    const [expiries] = await database.sql<{ definition: string }>(
      `SELECT indexdef AS definition FROM pg_indexes WHERE indexname = 'PK_job_scheduler_lease_expiry'`,
    );
    expect(expiries.definition).toContain('ON public."job-scheduler_lease_expiry" USING btree ("expiresAt", "leaseId")');
    expect(
      await database.sql(`SELECT tgname::text AS name FROM pg_trigger WHERE tgrelid = '"job-scheduler"'::regclass AND NOT tgisinternal ORDER BY 1`),
    ).toEqual([
      { name: 'job-scheduler_lease_expiry_delete' },
      { name: 'job-scheduler_lease_expiry_insert' },
      { name: 'job-scheduler_lease_expiry_truncate' },
      { name: 'job-scheduler_lease_expiry_update' },
    ]);
    const [byCode] = await database.sql<{ definition: string }>(
      `SELECT indexdef AS definition FROM pg_indexes WHERE indexname = 'IDX_job_scheduler_code_created_at'`,
    );
    expect(byCode.definition).toContain('(code, "createdAt")');
    expect(await database.sql(`SELECT to_regclass('"job-scheduler-pause"')::text AS t`)).toEqual([{ t: '"job-scheduler-pause"' }]);
  });

  it('revert and re-apply cleanly', async () => {
    const database = await fresh(true);
    const dataSource = await database.dataSource({ migrations: [...JobSchedulerMigrations], poolSize: 1 });
    for (let step = 0; step < JobSchedulerMigrations.length; step++) await dataSource.undoLastMigration();
    expect(await database.sql(`SELECT to_regclass('"job-scheduler"') AS t`)).toEqual([{ t: null }]);
    await dataSource.runMigrations();
    expect(Object.keys(await columnsOf(database))).toContain('fencingToken');
  });

  it('upgrade a 1.1 table in place: rows, ids and keys kept, finished runs stay finished', async () => {
    const database = await fresh(false);
    await database.sql(TABLE_11);
    const key = (code: string, runKey: string | null, type = JobSchedulerType.SCHEDULE) => buildLockKey(type, code, runKey);
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", data, "modifiedAt") VALUES
        ($1, 'sync-orders', 'SCHEDULE', 'SUCCESS', gen_random_uuid(), '{"rows": 42}', now() - interval '3 days'),
        ($2, 'seed', 'INITIAL', 'SUCCESS', gen_random_uuid(), NULL, now() - interval '300 days'),
        ($3, 'sync-orders', 'SCHEDULE', 'FAIL', gen_random_uuid(), '{"error": "ERP down"}', now() - interval '1 hour'),
        ($4, 'sync-orders', 'SCHEDULE', 'RUNNING', gen_random_uuid(), NULL, now() - interval '1 day'),
        ($5, 'sync-orders', 'SCHEDULE', 'RUNNING', gen_random_uuid(), NULL, now())`,
      [
        key('sync-orders', '2026-07-20T03:00:00Z'),
        key('seed', null, JobSchedulerType.INITIAL),
        key('sync-orders', 'failed-tick'),
        key('sync-orders', 'dead-holder-tick'),
        key('sync-orders', 'live-holder-tick'),
      ],
    );
    expect(key('sync-orders', '2026-07-20T03:00:00Z')).toBe('v2:aV_0WdnjWG686cnhQIIg7xFYkUVv2kIMT-wOCbiWakI');
    const before = await database.sql<{ id: string; lockKey: string; epoch: string }>(
      `SELECT id, "lockKey", EXTRACT(EPOCH FROM "modifiedAt")::text AS epoch FROM "job-scheduler" ORDER BY id`,
    );

    expect(await migrate(database)).toHaveLength(JobSchedulerMigrations.length);

    const after = await database.sql<{ id: string; lockKey: string; epoch: string; fencingToken: string }>(
      `SELECT id, "lockKey", EXTRACT(EPOCH FROM "modifiedAt")::text AS epoch, "fencingToken" FROM "job-scheduler" ORDER BY id`,
    );
    expect(after.map(({ id, lockKey, epoch }) => ({ id, lockKey, epoch }))).toEqual(before);
    expect(after.every((row) => row.fencingToken === '1')).toBe(true);
    expect((await columnsOf(database)).modifiedAt).toMatchObject({ data_type: 'timestamp with time zone' });

    const jobs = new JobSchedulerService(await database.dataSource());
    const schedule = (runKey: string) => ({ code: 'sync-orders', runKey, leaseMs: 15 * 60_000 });
    expect(await jobs.acquire(schedule('2026-07-20T03:00:00Z'))).toEqual({ acquired: false });
    expect(await jobs.acquire({ code: 'seed', type: JobSchedulerType.INITIAL })).toEqual({ acquired: false });
    expect(await jobs.acquire(schedule('live-holder-tick'))).toEqual({ acquired: false });
    // 1.1 rows carry fencing token 1; the sequence starts above it, so reclaims go up from there.
    const failedTick = await jobs.acquire(schedule('failed-tick'));
    const deadHolderTick = await jobs.acquire(schedule('dead-holder-tick'));
    expect(failedTick).toMatchObject({ acquired: true, reclaimed: true, fencingToken: 2 });
    expect(deadHolderTick).toMatchObject({ acquired: true, reclaimed: true, fencingToken: 3 });
    expect((await jobs.acquire(schedule('new-tick'))).acquired).toBe(true);
    const [failed] = await database.sql<{ lastError: unknown }>(`SELECT "lastError" FROM "job-scheduler" WHERE "lockKey" = $1`, [
      key('sync-orders', 'failed-tick'),
    ]);
    expect(failed.lastError).toEqual({ error: 'ERP down' });
    // Running the migrations again finds nothing to do.
    expect(await migrate(database)).toEqual([]);
  });

  it('upgrade a 1.0 table (no owner token) in place: acquires work, finished runs stay finished, a dead holder is taken over', async () => {
    const database = await fresh(false);
    await database.sql(TABLE_10);
    expect(Object.keys(await columnsOf(database))).not.toContain('ownerToken');
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, type, status, data, "modifiedAt") VALUES
        ('seed-demo', 'seed-demo', 'INITIAL', 'SUCCESS', NULL, now() - interval '300 days'),
        ('sync-orders:2026-07-20T03:00:00Z', 'sync-orders', 'SCHEDULE', 'SUCCESS', '{"rows": 42}', now() - interval '3 days'),
        ('sync-orders:dead-holder-tick', 'sync-orders', 'SCHEDULE', 'RUNNING', NULL, now() - interval '1 day')`,
    );

    expect(await migrate(database)).toHaveLength(JobSchedulerMigrations.length);
    expect((await columnsOf(database)).ownerToken).toMatchObject({ data_type: 'uuid', is_nullable: 'YES' });
    await database.sql(upgradingSql());

    const jobs = new JobSchedulerService(await database.dataSource());
    const schedule = (runKey: string) => ({ code: 'sync-orders', runKey, leaseMs: 15 * 60_000 });
    // A new run: was 42703 (column "ownerToken" does not exist) on every acquire.
    const fresh10 = await jobs.acquire(schedule('new-tick'));
    expect(fresh10).toMatchObject({ acquired: true, reclaimed: false });
    if (fresh10.acquired) expect(await jobs.complete(fresh10, { ok: true })).toBe(true);
    // What 1.0 finished stays finished; the row 1.0 left RUNNING a day ago is taken over, fenced from then on.
    expect(await jobs.acquire({ code: 'seed-demo', type: JobSchedulerType.INITIAL })).toEqual({ acquired: false });
    expect(await jobs.acquire(schedule('2026-07-20T03:00:00Z'))).toEqual({ acquired: false });
    const taken = await jobs.acquire(schedule('dead-holder-tick'));
    expect(taken).toMatchObject({ acquired: true, reclaimed: true });
    if (taken.acquired) expect(await jobs.fail(taken, { error: 'again' })).toBe(true);
    // Idempotent: nothing left to run, and the migration itself can run again on the upgraded table.
    expect(await migrate(database)).toEqual([]);
    const dataSource = await database.dataSource({ poolSize: 1 });
    const runner = dataSource.createQueryRunner();
    try {
      await new UpgradeJobSchedulerTableFrom111764547200001().up(runner);
    } finally {
      await runner.release();
    }
    expect(await database.sql(`SELECT count(*)::int AS n FROM "job-scheduler" WHERE "ownerToken" IS NOT NULL`)).toEqual([{ n: 2 }]);
  });

  it('synchronize: true on a migrated database keeps its columns, keys and indexes', async () => {
    const database = await fresh(true);
    const dataSource = await database.dataSource({ synchronize: true, poolSize: 1 });
    const pending = await dataSource.driver.createSchemaBuilder().log();
    // TypeORM reads a gen_random_uuid() default as "generated" and re-sets it; nothing else differs.
    expect(pending.upQueries.map((query) => query.query)).toEqual([
      'ALTER TABLE "job-scheduler" ALTER COLUMN "id" DROP DEFAULT',
      'ALTER TABLE "job-scheduler" ALTER COLUMN "id" SET DEFAULT gen_random_uuid()',
    ]);
    await dataSource.destroy();
    expect(await database.sql(`SELECT indexname FROM pg_indexes WHERE indexname LIKE 'IDX_job_scheduler_%' ORDER BY 1`)).toEqual([
      { indexname: 'IDX_job_scheduler_code_created_at' },
      { indexname: 'IDX_job_scheduler_code_run_key' },
      { indexname: 'IDX_job_scheduler_created_at' },
    ]);
  });

  it('synchronize: true builds a working table for prototypes', async () => {
    const database = await fresh(false);
    const dataSource = new DataSource({ type: 'postgres', url: database.url, entities: [JobScheduler], synchronize: true, poolSize: 1 });
    await dataSource.initialize();
    try {
      const jobs = new JobSchedulerService(dataSource);
      const lock = await jobs.acquire({ code: 'proto', runKey: 'r' });
      expect(lock).toMatchObject({ acquired: true, fencingToken: 1 });
      if (lock.acquired) expect(await jobs.complete(lock, { ok: true })).toBe(true);
      expect(await jobs.acquire({ code: 'proto', runKey: 'r' })).toEqual({ acquired: false });
      // The index prune reads by is declared on the entity; the storage parameters are the migration's only.
      expect(await database.sql(`SELECT indexdef FROM pg_indexes WHERE indexname = 'IDX_job_scheduler_created_at'`)).toEqual([
        { indexdef: expect.stringContaining('USING btree ("createdAt")') },
      ]);
    } finally {
      await dataSource.destroy();
    }
  });
});
