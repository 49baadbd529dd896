import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';
import { jobSchedulerTableOptions } from './support/job-scheduler-table-options';

/** The lease's expiry as migration 0009 indexed it: ("modifiedAt" as UTC) + "leaseMs" ms (a row without a lease: its "modifiedAt"). */
const expiryOf = (row: string, column = 'modifiedAt') => `(${row}"${column}" AT TIME ZONE 'UTC') + COALESCE(${row}"leaseMs", 0) * INTERVAL '1 millisecond'`;

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
 * own, `"job-scheduler_lease_expiry"` ("leaseId", "expiresAt"; one btree on both), kept by
 * triggers on the job-scheduler table, and drops IDX_job_scheduler_running_expiry (0009).
 *
 * Why: that index's key ("modifiedAt") and predicate ("status") change on every heartbeat and
 * every complete, so none of them could be a HOT update: each wrote a new version of the row
 * and an entry in all six indexes. Now the table's indexes are on columns that never change
 * after the insert, and heartbeats and completes are HOT (a run writes about a fifth less WAL;
 * `npm run bench -- peers table-growth`).
 *
 * What the triggers keep (the rule the take-over scan relies on): every RUNNING row has an entry
 * whose "expiresAt" is at or before its lease's expiry (0009's expression). A row that becomes
 * RUNNING, changes owner (a new fencing token) or gets an earlier expiry (expireMany) gets an
 * entry with its new expiry, in the statement that wrote it, whatever wrote it (every statement
 * of the lease, the acquire function, a node of an older release during a rolling upgrade). A
 * heartbeat only moves the expiry later: its entry stays, earlier than the lease, and the scans
 * check the row itself. When a row stops being RUNNING or gets a new entry, the entries it was
 * given at its start or at its last expiry change are deleted (by their "expiresAt", on the
 * index), as are a deleted RUNNING row's: the table holds about one entry per RUNNING row. An
 * entry left over (a row's entries from before this migration, once heartbeats moved its lease; an
 * expiry moved earlier, then later by the same owner) only costs a scan a lookup of its row.
 *
 * The triggers' function is SECURITY DEFINER (with a fixed search_path): the application's role
 * writes the job-scheduler table as before and needs no privilege on the expiry table to keep it;
 * it needs SELECT on it for the scans (without it, they read the job-scheduler table itself).
 *
 * A HOT update needs room for the new version on the row's page. Runs claimed together (many jobs
 * due at one instant, a tenant fan-out) are inserted together onto pages filled to the
 * fillfactor, and completed together: at 0004's 95, 3% of a batch of 1,000 completes were HOT;
 * at 50 (JOB_SCHEDULER_FILLFACTOR), all of them. So the fillfactor becomes 50 where it is still
 * 95 (an operator's own setting is kept; the revert puts 95 back where it is still 50). The price
 * is room: the pages of finished runs stay about half full (docs/operations.md).
 *
 * Takes a SHARE ROW EXCLUSIVE lock on the job-scheduler table for the migration (writes wait;
 * reads go on): the entries of the RUNNING rows are written under it, so that none is missed.
 * Until this migration runs, the scans read the job-scheduler table as before.
 */
export class TrackJobSchedulerLeaseExpiries1764547200010 implements MigrationInterface {
  name = 'TrackJobSchedulerLeaseExpiries1764547200010';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    // The function runs as its owner: it names the table with its schema (the one the table is created in).
    const [{ schema }] = (await queryRunner.query(`SELECT current_schema() AS schema`)) as Array<{ schema: string }>;
    const prefix = schemaPrefix || `"${schema.replace(/"/g, '""')}".`;
    const expiries = `${prefix}"job-scheduler_lease_expiry"`;
    const keep = `${prefix}"job-scheduler_keep_lease_expiry"`;
    await queryRunner.query(`CREATE TABLE IF NOT EXISTS ${expiries} ("leaseId" uuid NOT NULL, "expiresAt" timestamp NOT NULL)`);
    await queryRunner.query(`CREATE INDEX IF NOT EXISTS "IDX_job_scheduler_lease_expiry" ON ${expiries} ("expiresAt", "leaseId")`);
    await queryRunner.query(`
CREATE OR REPLACE FUNCTION ${keep}() RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $function$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM ${expiries};
    RETURN NULL;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    DELETE FROM ${expiries}
    WHERE "expiresAt" IN (${expiryOf('OLD.', 'startedAt')}, ${expiryOf('OLD.')}) AND "leaseId" = OLD."id";
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND NEW."status" = 'RUNNING' THEN
    INSERT INTO ${expiries} ("leaseId", "expiresAt") VALUES (NEW."id", ${expiryOf('NEW.')});
  END IF;
  RETURN NULL;
END
$function$`);
    for (const trigger of TRIGGERS) await queryRunner.query(`DROP TRIGGER IF EXISTS "${trigger}" ON ${table}`);
    await queryRunner.query(`CREATE TRIGGER "job-scheduler_lease_expiry_insert" AFTER INSERT ON ${table}
  FOR EACH ROW WHEN (NEW."status" = 'RUNNING') EXECUTE FUNCTION ${keep}()`);
    // Not on a heartbeat (RUNNING, same owner, a later expiry) nor on any other update of a row
    // that stays as it was (a finished row's data): the WHEN is evaluated without calling the function.
    await queryRunner.query(`CREATE TRIGGER "job-scheduler_lease_expiry_update" AFTER UPDATE ON ${table}
  FOR EACH ROW WHEN (
    (OLD."status" = 'RUNNING' AND NEW."status" <> 'RUNNING')
    OR (NEW."status" = 'RUNNING' AND (
      OLD."status" <> 'RUNNING'
      OR OLD."fencingToken" IS DISTINCT FROM NEW."fencingToken"
      OR ${expiryOf('NEW.')} < ${expiryOf('OLD.')})))
  EXECUTE FUNCTION ${keep}()`);
    // A RUNNING row deleted (by an operator: prune deletes finished rows only), or the table emptied.
    await queryRunner.query(`CREATE TRIGGER "job-scheduler_lease_expiry_delete" AFTER DELETE ON ${table}
  FOR EACH ROW WHEN (OLD."status" = 'RUNNING') EXECUTE FUNCTION ${keep}()`);
    await queryRunner.query(`CREATE TRIGGER "job-scheduler_lease_expiry_truncate" AFTER TRUNCATE ON ${table}
  FOR EACH STATEMENT EXECUTE FUNCTION ${keep}()`);
    await queryRunner.query(
      `INSERT INTO ${expiries} ("leaseId", "expiresAt") SELECT t."id", ${expiryOf('t.')} FROM ${table} AS t WHERE t."status" = 'RUNNING'`,
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
