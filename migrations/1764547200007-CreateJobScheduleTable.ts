import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

/**
 * The table of dynamic schedules ("job-schedule"): one row per schedule, created at runtime by
 * DynamicSchedules. Every write takes the next "version" from "job-schedule_version_seq", and a
 * removal leaves a tombstone ("removedAt") for a while, so that every instance finds what changed
 * with one indexed read of the versions above the last one it saw. Ids, handlers and tenants are
 * in the "C" collation: keyset paging orders them by their bytes, the same everywhere.
 * Occurrences are leased in "job-scheduler" (code = handler, runKey = schedule id + due instant).
 */
export class CreateJobScheduleTable1764547200007 implements MigrationInterface {
  name = 'CreateJobScheduleTable1764547200007';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { schemaPrefix } = jobSchedulerTableNames(queryRunner);
    const table = `${schemaPrefix}"job-schedule"`;
    await queryRunner.query(`CREATE SEQUENCE IF NOT EXISTS ${schemaPrefix}"job-schedule_version_seq" AS bigint`);
    await queryRunner.query(`
CREATE TABLE IF NOT EXISTS ${table} (
  "id" varchar(256) COLLATE "C" NOT NULL,
  "handler" varchar(64) COLLATE "C" NOT NULL,
  "cron" varchar(256),
  "everyMs" bigint,
  "timeZone" varchar(64),
  "data" jsonb,
  "tenantId" varchar(1024) COLLATE "C",
  "enabled" boolean NOT NULL DEFAULT true,
  "overlap" varchar(16) NOT NULL DEFAULT 'skip',
  "missed" varchar(16) NOT NULL DEFAULT 'drop',
  "timeoutMs" integer,
  "leaseMs" integer,
  "version" bigint NOT NULL,
  "removedAt" timestamptz,
  "createdAt" timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "modifiedAt" timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "PK_job_schedule" PRIMARY KEY ("id"),
  CONSTRAINT "CHK_job_schedule_when" CHECK (("cron" IS NULL) <> ("everyMs" IS NULL))
)`);
    await queryRunner.query(`CREATE UNIQUE INDEX IF NOT EXISTS "IDX_job_schedule_version" ON ${table} ("version")`);
    await queryRunner.query(`CREATE INDEX IF NOT EXISTS "IDX_job_schedule_handler" ON ${table} ("handler", "id")`);
    await queryRunner.query(`CREATE INDEX IF NOT EXISTS "IDX_job_schedule_tenant" ON ${table} ("tenantId", "id") WHERE "tenantId" IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX IF NOT EXISTS "IDX_job_schedule_removed_at" ON ${table} ("removedAt") WHERE "removedAt" IS NOT NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`DROP TABLE IF EXISTS ${schemaPrefix}"job-schedule"`);
    await queryRunner.query(`DROP SEQUENCE IF EXISTS ${schemaPrefix}"job-schedule_version_seq"`);
  }
}
