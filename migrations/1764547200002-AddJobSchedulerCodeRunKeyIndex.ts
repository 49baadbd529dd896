import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

/**
 * Indexes ("code", "runKey" COLLATE "C") for the scheduler's history read (the latest occurrence
 * of a job). It runs inside the migration transaction like the others (TypeORM's default mode
 * forbids opting out), so it blocks writes to the table while it builds: on a large table,
 * create it beforehand with the same statement plus CONCURRENTLY, and this becomes a no-op.
 */
export class AddJobSchedulerCodeRunKeyIndex1764547200002 implements MigrationInterface {
  name = 'AddJobSchedulerCodeRunKeyIndex1764547200002';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`CREATE INDEX IF NOT EXISTS "IDX_job_scheduler_code_run_key" ON ${table} ("code", "runKey" COLLATE "C")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`DROP INDEX IF EXISTS ${schemaPrefix}"IDX_job_scheduler_code_run_key"`);
  }
}
