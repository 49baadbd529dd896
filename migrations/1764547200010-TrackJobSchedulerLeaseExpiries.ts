import type { MigrationInterface, QueryRunner } from 'typeorm';
import { inSchema, keepLeaseExpiryFunction, leaseExpiryEntryOf as entryOf, leaseExpiryOf as expiryOf } from './support/job-scheduler-lease-expiry-function';
import { jobSchedulerSchema, jobSchedulerTableNames } from './support/job-scheduler-table-names';
import { jobSchedulerTableOptions } from './support/job-scheduler-table-options';

/**
 * The fillfactor this migration sets where the table still has 0004's 95: room on each page for
 * the complete of every run inserted on it, so that completes are HOT when runs are claimed and
 * completed in batches (many jobs due at one instant, a tenant fan-out), not only one by one.
 */
export const JOB_SCHEDULER_FILLFACTOR = 50;
const TUNED_FILLFACTOR = 'fillfactor=95';

const TRIGGERS = [
  'job-scheduler_lease_expiry_insert',
  'job-scheduler_lease_expiry_update',
  'job-scheduler_lease_expiry_delete',
  'job-scheduler_lease_expiry_truncate',
] as const;

/**
 * Moves the take-over's index of the leases out of the job-scheduler table into a table of their
 * own, `"job-scheduler_lease_expiry"` ("leaseId", "expiresAt"; its primary key on both), kept by
 * triggers on the job-scheduler table, and drops IDX_job_scheduler_running_expiry (0009).
 *
 * Why: that index's key ("modifiedAt") and predicate ("status") change on every heartbeat and
 * every complete, so none of them could be a HOT update: each wrote a new version of the row
 * and an entry in all six indexes. Now the table's indexes are on columns that never change
 * after the insert, and heartbeats and completes are HOT (a run writes about a fifth less WAL;
 * `npm run bench -- peers table-growth`).
 *
 * What the triggers keep: every RUNNING row has exactly one entry, at entryOf(row), which is at
 * or before its lease's expiry (0009's expression): that is the rule the take-over scan relies
 * on. The entry is written by the statement that wrote the row, whatever wrote it (every
 * statement of the lease, the acquire function, a node of an older release during a rolling
 * upgrade): inserted when the row becomes RUNNING, moved (deleted at its old value, inserted at
 * the new) when the owner or entryOf changes, deleted when the row stops being RUNNING or is
 * deleted. A heartbeat in the first half of a lease changes nothing there (the entry is the
 * lease's first expiry, earlier than the lease: the scans check the row itself); past it, each
 * heartbeat moves the entry to the new expiry, so that a run that lives long is not read by every
 * scan. No entry of a finished row is left.
 *
 * The triggers' function is SECURITY DEFINER (a fixed search_path, the tables named with their
 * schema, EXECUTE revoked from PUBLIC, refusing any table but job-scheduler): the application's
 * role writes the job-scheduler table as before and needs no privilege on the expiry table to
 * keep it; it needs SELECT on it for the scans (without it, they read the job-scheduler table
 * itself). The primary key is the table's replica identity, so that a publication FOR ALL TABLES
 * (logical replication, change data capture) accepts its deletes. Triggers do not fire for rows a
 * logical replication subscriber applies: publish both tables, or the subscriber's copy has no entries.
 *
 * A HOT update needs room for the new version on the row's page. Runs claimed together (many jobs
 * due at one instant, a tenant fan-out) are inserted together onto pages filled to the
 * fillfactor, and completed together: at 0004's 95, 3% of a batch of 1,000 completes were HOT;
 * at 50 (JOB_SCHEDULER_FILLFACTOR), all of them. So the fillfactor becomes 50 where it is still
 * 95 (an operator's own setting is kept; the revert puts 95 back where it is still 50). The price
 * is room: the pages of finished runs stay about half full (docs/operations.md).
 *
 * Locks the job-scheduler table until the migration commits: SHARE ROW EXCLUSIVE from the first
 * trigger on (writes wait), so that the entries of the RUNNING rows written next miss none; ACCESS
 * EXCLUSIVE from the DROP INDEX on (reads wait too). Both last as long as the RUNNING rows take to
 * read (on the index dropped last), not the history.
 * Until this migration runs, the scans read the job-scheduler table as before.
 */
export class TrackJobSchedulerLeaseExpiries1764547200010 implements MigrationInterface {
  name = 'TrackJobSchedulerLeaseExpiries1764547200010';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    // The function runs as its owner with a search_path of its own: it names the tables with the
    // schema the job-scheduler table is in.
    const schema = await jobSchedulerSchema(queryRunner);
    const expiries = inSchema(schema, 'job-scheduler_lease_expiry');
    const keep = inSchema(schema, 'job-scheduler_keep_lease_expiry');
    await queryRunner.query(
      `CREATE TABLE IF NOT EXISTS ${expiries} ("leaseId" uuid NOT NULL, "expiresAt" timestamp NOT NULL, ` +
        `CONSTRAINT "PK_job_scheduler_lease_expiry" PRIMARY KEY ("expiresAt", "leaseId"))`,
    );
    // As it shipped in 0010: its insert skips an entry already there (0011 replaces it).
    await queryRunner.query(keepLeaseExpiryFunction(schema, 'skip-existing'));
    // Only the triggers call it (PostgreSQL does not check EXECUTE when a trigger fires).
    await queryRunner.query(`REVOKE EXECUTE ON FUNCTION ${keep}() FROM PUBLIC`);
    for (const trigger of TRIGGERS) await queryRunner.query(`DROP TRIGGER IF EXISTS "${trigger}" ON ${table}`);
    await queryRunner.query(`CREATE TRIGGER "job-scheduler_lease_expiry_insert" AFTER INSERT ON ${table}
  FOR EACH ROW WHEN (NEW."status" = 'RUNNING') EXECUTE FUNCTION ${keep}()`);
    // Whenever a row starts or stops being RUNNING, changes owner, or its entry changes. The WHEN
    // is evaluated without calling the function: a finished row's update, and a heartbeat in the
    // first half of its lease (most runs' only ones), call nothing.
    await queryRunner.query(`CREATE TRIGGER "job-scheduler_lease_expiry_update" AFTER UPDATE ON ${table}
  FOR EACH ROW WHEN (
    (OLD."status" = 'RUNNING' AND NEW."status" <> 'RUNNING')
    OR (NEW."status" = 'RUNNING' AND (
      OLD."status" <> 'RUNNING'
      OR OLD."fencingToken" IS DISTINCT FROM NEW."fencingToken"
      OR (${entryOf('NEW.')}) IS DISTINCT FROM (${entryOf('OLD.')}))))
  EXECUTE FUNCTION ${keep}()`);
    // A RUNNING row deleted (by an operator: prune deletes finished rows only), or the table emptied.
    await queryRunner.query(`CREATE TRIGGER "job-scheduler_lease_expiry_delete" AFTER DELETE ON ${table}
  FOR EACH ROW WHEN (OLD."status" = 'RUNNING') EXECUTE FUNCTION ${keep}()`);
    await queryRunner.query(`CREATE TRIGGER "job-scheduler_lease_expiry_truncate" AFTER TRUNCATE ON ${table}
  FOR EACH STATEMENT EXECUTE FUNCTION ${keep}()`);
    // The RUNNING rows' entries, under the triggers' lock: none is missed.
    await queryRunner.query(
      `INSERT INTO ${expiries} ("leaseId", "expiresAt") SELECT t."id", ${entryOf('t.')} ` +
        `FROM ${table} AS t WHERE t."status" = 'RUNNING' ON CONFLICT DO NOTHING`,
    );
    await queryRunner.query(`DROP INDEX IF EXISTS ${schemaPrefix}"IDX_job_scheduler_running_expiry"`);
    if ((await jobSchedulerTableOptions(queryRunner)).includes(TUNED_FILLFACTOR)) {
      await queryRunner.query(`ALTER TABLE ${table} SET (fillfactor = ${JOB_SCHEDULER_FILLFACTOR})`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { table, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    if ((await jobSchedulerTableOptions(queryRunner)).includes(`fillfactor=${JOB_SCHEDULER_FILLFACTOR}`)) {
      await queryRunner.query(`ALTER TABLE ${table} SET (${TUNED_FILLFACTOR})`);
    }
    await queryRunner.query(`CREATE INDEX IF NOT EXISTS "IDX_job_scheduler_running_expiry" ON ${table} ((${expiryOf('')})) WHERE "status" = 'RUNNING'`);
    for (const trigger of TRIGGERS) await queryRunner.query(`DROP TRIGGER IF EXISTS "${trigger}" ON ${table}`);
    await queryRunner.query(`DROP FUNCTION IF EXISTS ${schemaPrefix}"job-scheduler_keep_lease_expiry"()`);
    await queryRunner.query(`DROP TABLE IF EXISTS ${schemaPrefix}"job-scheduler_lease_expiry"`);
  }
}
