import type { QueryRunner } from 'typeorm';
import { jobSchedulerTableNames } from './job-scheduler-table-names';

/** The job-scheduler table's storage parameters, as `name=value` (none when it has no table yet). */
export const jobSchedulerTableOptions = async (queryRunner: QueryRunner): Promise<string[]> => {
  const { schemaLiteral, tableLiteral } = jobSchedulerTableNames(queryRunner);
  const rows: { reloptions: string[] | null }[] = await queryRunner.query(
    `SELECT c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ${schemaLiteral} AND c.relname = ${tableLiteral}`,
  );
  return rows[0]?.reloptions ?? [];
};
