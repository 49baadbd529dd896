import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

/**
 * The declared jobs an operator paused at runtime (the dashboard's pause / resume): one row per
 * paused job, deleted on resume. Every instance reads the whole table every few seconds (a handful
 * of rows) and disarms the paused jobs' timers. Next to the lease table, in the same schema.
 */
export class AddJobPauseTable1764547200008 implements MigrationInterface {
  name = 'AddJobPauseTable1764547200008';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`CREATE TABLE IF NOT EXISTS ${schemaPrefix}"job-scheduler-pause" (
  "code" varchar(64) NOT NULL,
  "pausedBy" varchar(256) NOT NULL,
  "pausedAt" timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "PK_job_scheduler_pause_code" PRIMARY KEY ("code")
)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`DROP TABLE IF EXISTS ${schemaPrefix}"job-scheduler-pause"`);
  }
}
