import type { MigrationInterface, QueryRunner } from 'typeorm';
import { keepLeaseExpiryFunction } from './support/job-scheduler-lease-expiry-function';
import { jobSchedulerSchema } from './support/job-scheduler-table-names';

/**
 * Replaces the function of 0010's triggers with one whose insert of a lease's entry is a plain
 * INSERT, not `INSERT … ON CONFLICT DO NOTHING`. A speculative insertion writes a second WAL
 * record to confirm the first; every run inserts one entry, so this is one record (about 50 B,
 * 3% of a run's WAL, measured on 1,000 jobs due together) less per run. Nothing else changes:
 * the triggers, the table and its entries stay as they are.
 *
 * Why the conflict does not arise: an entry's key is ("expiresAt", "leaseId"), its leaseId the
 * row's own id. A row gets an entry when it is inserted RUNNING (a new id) or updated: then the
 * same call first deletes the entry of the row's old version (and a row updated twice in one
 * transaction finds its own deleted entry dead to the unique check), and concurrent writers of
 * one row queue on its row lock. So while the triggers fire, a row has at most one entry, and a
 * new one never meets it. An entry can be left behind only where the triggers did not fire (a
 * session with `session_replication_role = replica`, `ALTER TABLE … DISABLE TRIGGER`, a logical
 * replication subscriber); such a leftover is harmless to the scans (they check the row itself),
 * and only an insert of the same row at the same expiry to the microsecond would meet it: that
 * statement would now fail with a unique violation on "PK_job_scheduler_lease_expiry" where
 * 0010's function skipped it (docs/upgrading.md).
 *
 * CREATE OR REPLACE FUNCTION takes no lock on the job-scheduler table and keeps the function's
 * owner and grants: statements running on it finish with the old body, later ones use the new.
 * The revert puts 0010's function back.
 */
export class InsertJobSchedulerLeaseExpiriesWithoutConflictCheck1764547200011 implements MigrationInterface {
  name = 'InsertJobSchedulerLeaseExpiriesWithoutConflictCheck1764547200011';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(keepLeaseExpiryFunction(await jobSchedulerSchema(queryRunner), 'plain'));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(keepLeaseExpiryFunction(await jobSchedulerSchema(queryRunner), 'skip-existing'));
  }
}
