import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

/**
 * Creates the 2.0 job-scheduler table and its enum types where they do not exist yet. On a
 * database that already has the 1.1 table this does nothing; the next migration upgrades it.
 */
export class CreateJobSchedulerTable1764547200000 implements MigrationInterface {
  name = 'CreateJobSchedulerTable1764547200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table, typeEnum, statusEnum } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`DO $$ BEGIN
  CREATE TYPE ${typeEnum} AS ENUM ('INITIAL', 'SCHEDULE');
EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
    await queryRunner.query(`DO $$ BEGIN
  CREATE TYPE ${statusEnum} AS ENUM ('RUNNING', 'SUCCESS', 'FAIL');
EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
    await queryRunner.query(`CREATE TABLE IF NOT EXISTS ${table} (
  "id" uuid NOT NULL DEFAULT gen_random_uuid(),
  "lockKey" varchar(320) NOT NULL,
  "code" varchar(64) NOT NULL,
  "name" varchar(256),
  "type" ${typeEnum} NOT NULL DEFAULT 'SCHEDULE',
  "status" ${statusEnum} NOT NULL DEFAULT 'RUNNING',
  "ownerToken" uuid,
  "data" jsonb,
  "createdAt" timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "modifiedAt" timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "runKey" varchar(1024),
  "leaseMs" integer,
  "fencingToken" bigint NOT NULL DEFAULT 1,
  "attempts" integer NOT NULL DEFAULT 1,
  "ownerId" varchar(256),
  "startedAt" timestamptz,
  "finishedAt" timestamptz,
  "lastError" jsonb,
  CONSTRAINT "PK_job_scheduler_id" PRIMARY KEY ("id"),
  CONSTRAINT "UQ_job_scheduler_lock_key" UNIQUE ("lockKey")
)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { table, typeEnum, statusEnum } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`DROP TABLE IF EXISTS ${table}`);
    await queryRunner.query(`DROP TYPE IF EXISTS ${statusEnum}`);
    await queryRunner.query(`DROP TYPE IF EXISTS ${typeEnum}`);
  }
}
