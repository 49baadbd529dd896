import type { MigrationInterface, QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

/**
 * Draws fencing tokens from a sequence, "job-scheduler_fencingToken_seq" (the name TypeORM gives
 * the sequence of a generated column, so that `synchronize` reads the table as the entity
 * declares it). Acquire takes the next value on insert and on every reclaim, so a run's tokens
 * strictly increase forever: across reclaims, and across prune and retention, which delete rows.
 *
 * The sequence starts above every token already stored (rows of 1.1 and of earlier 2.0 builds
 * included), under a lock that keeps writers out meanwhile. It becomes the column's default too,
 * so that rows inserted by 1.1 nodes during a rolling upgrade also draw from it.
 */
export class AddJobSchedulerFencingTokenSequence1764547200003 implements MigrationInterface {
  name = 'AddJobSchedulerFencingTokenSequence1764547200003';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    const sequence = `${schemaPrefix}"job-scheduler_fencingToken_seq"`;
    const regclass = `'${sequence.replace(/'/g, "''")}'`;
    await queryRunner.query(`LOCK TABLE ${table} IN SHARE ROW EXCLUSIVE MODE`);
    await queryRunner.query(`CREATE SEQUENCE IF NOT EXISTS ${sequence} AS bigint OWNED BY ${table}."fencingToken"`);
    // Only forwards: the next value becomes max + 1 when a stored token is at or past it.
    await queryRunner.query(
      `SELECT setval(${regclass}, stored.max) FROM (SELECT max("fencingToken") AS max FROM ${table}) AS stored
       WHERE stored.max >= (SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM ${sequence})`,
    );
    await queryRunner.query(`ALTER TABLE ${table} ALTER COLUMN "fencingToken" SET DEFAULT nextval(${regclass}::regclass)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { table, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`ALTER TABLE ${table} ALTER COLUMN "fencingToken" SET DEFAULT 1`);
    await queryRunner.query(`DROP SEQUENCE IF EXISTS ${schemaPrefix}"job-scheduler_fencingToken_seq"`);
  }
}
