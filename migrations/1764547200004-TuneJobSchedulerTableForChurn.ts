import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

/**
 * The storage parameters the table gets, with why (figures: README, "Performance" and "Pruning";
 * `npm run bench -- table-growth` compares the table with and without them).
 *
 * - fillfactor: heartbeat and complete change no indexed column ("id", "lockKey", "code",
 *   "runKey"), so they are HOT updates (no new index entries, less WAL) when the row's page has
 *   room for the new version. Rows inserted into space that vacuum freed land on full pages;
 *   leaving 5% free keeps their updates HOT. Not lower: with rows of about 200 bytes, a page that
 *   keeps 10% free is left by inserts before page pruning frees it, and short runs then fill pages
 *   a third full until vacuum comes.
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

/**
 * Sets the table's storage parameters for heavy insert + delete churn (a run per occurrence,
 * retention deleting the old ones): a fillfactor that keeps heartbeat and complete HOT, and
 * autovacuum / autoanalyze started after 2% of the table changed rather than 20%.
 *
 * Online: ALTER TABLE ... SET takes a SHARE UPDATE EXCLUSIVE lock (reads and writes go on) and
 * rewrites nothing. The fillfactor applies to pages filled from now on; existing full pages keep
 * their layout until their rows are deleted (or VACUUM FULL / pg_repack rewrites the table).
 *
 * An operator's own setting wins: `up` sets only the parameters the table does not have yet, and
 * `down` resets only those still at the value `up` gives them.
 */
export class TuneJobSchedulerTableForChurn1764547200004 implements MigrationInterface {
  name = 'TuneJobSchedulerTableForChurn1764547200004';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table } = jobSchedulerTableNames(queryRunner);
    const current = await currentOptions(queryRunner);
    const missing = JOB_SCHEDULER_STORAGE_PARAMETERS.filter(([name]) => !current.some((option) => option.startsWith(`${name}=`)));
    if (missing.length === 0) return;
    await queryRunner.query(`ALTER TABLE ${table} SET (${missing.map(asOption).join(', ')})`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { table } = jobSchedulerTableNames(queryRunner);
    const current = await currentOptions(queryRunner);
    const ours = JOB_SCHEDULER_STORAGE_PARAMETERS.filter((parameter) => current.includes(asOption(parameter)));
    if (ours.length === 0) return;
    await queryRunner.query(`ALTER TABLE ${table} RESET (${ours.map(([name]) => name).join(', ')})`);
  }
}

/** The table's storage parameters, as `name=value` (none when it has no table yet). */
const currentOptions = async (queryRunner: QueryRunner): Promise<string[]> => {
  const { schemaLiteral, tableLiteral } = jobSchedulerTableNames(queryRunner);
  const rows: { reloptions: string[] | null }[] = await queryRunner.query(
    `SELECT c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ${schemaLiteral} AND c.relname = ${tableLiteral}`,
  );
  return rows[0]?.reloptions ?? [];
};
