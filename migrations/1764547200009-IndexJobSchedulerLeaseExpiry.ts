import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

/**
 * Replaces the take-over's index of the RUNNING rows by "modifiedAt" (migration 0006) with one by
 * the instant each lease runs out: ("modifiedAt" as UTC) + "leaseMs" milliseconds (a row without a
 * lease: its "modifiedAt"). The take-over scan and the inspector's expired leases then read only
 * the leases that ran out, not every RUNNING row: with 100,000 occurrences claimed ahead, a scan
 * read all of them. A heartbeat and a complete change the same columns of it as of the index it
 * replaces, so writes cost the same. Built inside the migration transaction like the others: on a
 * large table, create it beforehand with CONCURRENTLY (docs/upgrading.md) and this creates nothing.
 */
export class IndexJobSchedulerLeaseExpiry1764547200009 implements MigrationInterface {
  name = 'IndexJobSchedulerLeaseExpiry1764547200009';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(
      `CREATE INDEX IF NOT EXISTS "IDX_job_scheduler_running_expiry" ON ${table} ` +
        `((("modifiedAt" AT TIME ZONE 'UTC') + COALESCE("leaseMs", 0) * INTERVAL '1 millisecond')) WHERE "status" = 'RUNNING'`,
    );
    await queryRunner.query(`DROP INDEX IF EXISTS ${schemaPrefix}"IDX_job_scheduler_running_modified_at"`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { table, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`CREATE INDEX IF NOT EXISTS "IDX_job_scheduler_running_modified_at" ON ${table} ("modifiedAt") WHERE "status" = 'RUNNING'`);
    await queryRunner.query(`DROP INDEX IF EXISTS ${schemaPrefix}"IDX_job_scheduler_running_expiry"`);
  }
}
