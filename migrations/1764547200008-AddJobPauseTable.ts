import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

/**
 * The operator dashboard's schema.
 *
 * - The declared jobs an operator paused at runtime (pause / resume): one row per paused job,
 *   deleted on resume. Every instance reads the whole table every few seconds (a handful of rows)
 *   and disarms the paused jobs' timers. Next to the lease table, in the same schema.
 * - IDX_job_scheduler_code_created_at: the runs of one code, newest first (the runs list filtered
 *   by job, JobRunsInspector.findRuns({ code })). Without it a rare code's page walks the
 *   "createdAt" index across most of the table (0.3 s cold at 1e6 rows). Neither column ever
 *   changes after the insert, so this index adds no cost to heartbeats and finalization (which
 *   are not HOT anyway since 0006's index on "modifiedAt" WHERE status = 'RUNNING'; docs/limits.md). Built inside
 *   the migration transaction like the others: on a large table, create it beforehand with
 *   CONCURRENTLY and this becomes a no-op.
 */
export class AddJobPauseTable1764547200008 implements MigrationInterface {
  name = 'AddJobPauseTable1764547200008';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { schemaPrefix, table } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`CREATE TABLE IF NOT EXISTS ${schemaPrefix}"job-scheduler-pause" (
  "code" varchar(64) NOT NULL,
  "pausedBy" varchar(256) NOT NULL,
  "pausedAt" timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "PK_job_scheduler_pause_code" PRIMARY KEY ("code")
)`);
    await queryRunner.query(`CREATE INDEX IF NOT EXISTS "IDX_job_scheduler_code_created_at" ON ${table} ("code", "createdAt")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`DROP INDEX IF EXISTS ${schemaPrefix}"IDX_job_scheduler_code_created_at"`);
    await queryRunner.query(`DROP TABLE IF EXISTS ${schemaPrefix}"job-scheduler-pause"`);
  }
}
