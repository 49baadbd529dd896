import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

/**
 * A partial index of the RUNNING rows by "modifiedAt", for the scheduler's take-over scan (the
 * occurrences whose holder stopped heartbeating) and the inspector's expired leases. It holds
 * only the runs in progress, a handful however large the table grows, so each instance's one
 * scan per period stays a tiny index read. Built inside the migration transaction like the
 * others: on a large table, create it beforehand with CONCURRENTLY and this becomes a no-op.
 */
export class AddJobSchedulerRunningIndex1764547200006 implements MigrationInterface {
  name = 'AddJobSchedulerRunningIndex1764547200006';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`CREATE INDEX IF NOT EXISTS "IDX_job_scheduler_running_modified_at" ON ${table} ("modifiedAt") WHERE "status" = 'RUNNING'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`DROP INDEX IF EXISTS ${schemaPrefix}"IDX_job_scheduler_running_modified_at"`);
  }
}
