import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';
import { jobSchedulerTableOptions as currentOptions } from './support/job-scheduler-table-options';

/**
 * The storage parameters the table gets, with why (README, "Table settings for churn", with the
 * figures of `npm run bench -- table-growth retention-churn`).
 *
 * - fillfactor: heartbeat and complete change no indexed column ("id", "lockKey", "code",
 *   "runKey", "createdAt"), so they are HOT updates (no new index entries, less WAL) when the
 *   row's page has room for the new version. Rows inserted into space that vacuum freed land on
 *   full pages; leaving 5% free keeps their updates HOT. Not lower: inserts never use the space
 *   kept free, so every point more makes the table larger for every run.
 * - autovacuum: retention deletes rows as fast as they arrive; at the default scale factor (20% of
 *   the table dead before a vacuum) a table kept 30 days carries 6 days of deleted rows before
 *   their space is reused. These start a vacuum (and an analyze) after 2% of the table changed,
 *   never before 1,000 rows; the insert ones keep a table without retention frozen in small steps.
 */
export const JOB_SCHEDULER_STORAGE_PARAMETERS: ReadonlyArray<readonly [name: string, value: string]> = [
  ['fillfactor', '95'],
  ['autovacuum_vacuum_scale_factor', '0.02'],
  ['autovacuum_vacuum_threshold', '1000'],
  ['autovacuum_vacuum_insert_scale_factor', '0.02'],
  ['autovacuum_vacuum_insert_threshold', '1000'],
  ['autovacuum_analyze_scale_factor', '0.02'],
  ['autovacuum_analyze_threshold', '1000'],
];

/** `name=value` as pg_class.reloptions lists it. */
const asOption = ([name, value]: readonly [string, string]): string => `${name}=${value}`;

/** Finished runs by age, for prune (see the prune statement in job-scheduler.sql.ts). */
export const JOB_SCHEDULER_CREATED_AT_INDEX = 'IDX_job_scheduler_created_at';

/**
 * Tunes the table for heavy insert + delete churn (a run per occurrence, retention deleting the
 * old ones):
 *
 * - storage parameters: a fillfactor that keeps heartbeat and complete HOT, and autovacuum /
 *   autoanalyze started after 2% of the table changed rather than 20%. Online: ALTER TABLE ... SET
 *   takes a SHARE UPDATE EXCLUSIVE lock (reads and writes go on) and rewrites nothing; the
 *   fillfactor applies to pages filled from now on. An operator's own setting wins: `up` sets only
 *   the parameters the table does not have yet, and `down` resets only those still at our value.
 * - a btree on "createdAt", so that a prune batch reads the old rows only, not the whole table.
 *   "createdAt" never changes after the insert, so the index keeps updates HOT (an index on
 *   "modifiedAt", or one restricted to finished rows, would not). Built inside the migration
 *   transaction like the others (TypeORM's default mode forbids opting out), which blocks writes
 *   to the table while it builds (about a second per million rows here): on a large table, create
 *   it beforehand with CREATE INDEX CONCURRENTLY (README, "Table settings for churn") and this
 *   step keeps it. An invalid index of that name (a concurrent build that failed) is rebuilt.
 */
export class TuneJobSchedulerTableForChurn1764547200004 implements MigrationInterface {
  name = 'TuneJobSchedulerTableForChurn1764547200004';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    const current = await currentOptions(queryRunner);
    const missing = JOB_SCHEDULER_STORAGE_PARAMETERS.filter(([name]) => !current.some((option) => option.startsWith(`${name}=`)));
    if (missing.length > 0) await queryRunner.query(`ALTER TABLE ${table} SET (${missing.map(asOption).join(', ')})`);
    if ((await createdAtIndexValid(queryRunner)) === false) {
      await queryRunner.query(`DROP INDEX ${schemaPrefix}"${JOB_SCHEDULER_CREATED_AT_INDEX}"`);
    }
    await queryRunner.query(`CREATE INDEX IF NOT EXISTS "${JOB_SCHEDULER_CREATED_AT_INDEX}" ON ${table} ("createdAt")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { table, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`DROP INDEX IF EXISTS ${schemaPrefix}"${JOB_SCHEDULER_CREATED_AT_INDEX}"`);
    const current = await currentOptions(queryRunner);
    const ours = JOB_SCHEDULER_STORAGE_PARAMETERS.filter((parameter) => current.includes(asOption(parameter)));
    if (ours.length > 0) await queryRunner.query(`ALTER TABLE ${table} RESET (${ours.map(([name]) => name).join(', ')})`);
  }
}

/** Whether the "createdAt" index is usable; null when there is none. */
const createdAtIndexValid = async (queryRunner: QueryRunner): Promise<boolean | null> => {
  const { schemaLiteral } = jobSchedulerTableNames(queryRunner);
  const rows: { valid: boolean }[] = await queryRunner.query(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ${schemaLiteral} AND c.relname = '${JOB_SCHEDULER_CREATED_AT_INDEX}'`,
  );
  return rows[0]?.valid ?? null;
};
