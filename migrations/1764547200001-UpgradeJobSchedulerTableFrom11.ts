import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

const ADDED_COLUMNS = [
  ['runKey', 'varchar(1024)'],
  ['leaseMs', 'integer'],
  ['fencingToken', 'bigint NOT NULL DEFAULT 1'],
  ['attempts', 'integer NOT NULL DEFAULT 1'],
  ['ownerId', 'varchar(256)'],
  ['startedAt', 'timestamptz'],
  ['finishedAt', 'timestamptz'],
  ['lastError', 'jsonb'],
] as const;

const TIMESTAMPS = ['createdAt', 'modifiedAt'] as const;

/**
 * The owner token every fenced statement names. 1.1 has it (NOT NULL); 1.0 has none, so it is
 * added where it is missing, nullable as in 2.0's own table: 1.0's rows get none, and an acquire
 * that reclaims one gives it a token. Never dropped by down(): 1.1 had it.
 */
const OWNER_TOKEN = ['ownerToken', 'uuid'] as const;

/**
 * Upgrades a table written by release 1.1 or 1.0 in place: adds the 2.0 columns, and the owner
 * token on a 1.0 table (constant defaults or none, so no table rewrite for them), and turns
 * createdAt / modifiedAt into timestamptz. Rows, ids and lock keys are kept, so every finished
 * run stays finished. 1.x stored no lease per row: such rows expire after the lease of whoever
 * tries to reclaim them, as in 1.x.
 *
 * The timestamp conversion reads the old values in the session's TimeZone, the zone in which
 * 1.x's CURRENT_TIMESTAMP was stored: run it with the TimeZone your 1.x application used (the
 * server default unless you changed it). Does nothing on a table that is already 2.0. For a 1.0
 * table, also run UPGRADING.md's "Rewriting 1.0 keys" statement once, after the migrations.
 */
export class UpgradeJobSchedulerTableFrom111764547200001 implements MigrationInterface {
  name = 'UpgradeJobSchedulerTableFrom111764547200001';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table, schemaLiteral, tableLiteral } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(
      `ALTER TABLE ${table} ${[OWNER_TOKEN, ...ADDED_COLUMNS].map(([column, type]) => `ADD COLUMN IF NOT EXISTS "${column}" ${type}`).join(', ')}`,
    );
    const rows: { column_name: string }[] = await queryRunner.query(
      `SELECT column_name FROM information_schema.columns
       WHERE table_schema = ${schemaLiteral} AND table_name = ${tableLiteral}
         AND data_type = 'timestamp without time zone'`,
    );
    const legacy = TIMESTAMPS.filter((column) => rows.some((row) => row.column_name === column));
    if (legacy.length > 0) {
      await queryRunner.query(`ALTER TABLE ${table} ${legacy.map((column) => `ALTER COLUMN "${column}" TYPE timestamptz`).join(', ')}`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { table } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(
      `ALTER TABLE ${table} ${[
        ...TIMESTAMPS.map((column) => `ALTER COLUMN "${column}" TYPE timestamp`),
        ...ADDED_COLUMNS.map(([column]) => `DROP COLUMN IF EXISTS "${column}"`),
      ].join(', ')}`,
    );
  }
}
