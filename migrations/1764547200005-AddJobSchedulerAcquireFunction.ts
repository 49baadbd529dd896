import type { MigrationInterface, QueryRunner } from 'typeorm';
import { acquireFunctionSignature, acquireFunctionStatement } from './support/job-scheduler-acquire-function';
import { jobSchedulerTableNames } from './support/job-scheduler-table-names';

/**
 * Installs `"job-scheduler_acquire"`, the lease's acquire statement inside a PL/pgSQL function,
 * for unnamed statements (`preparedStatements: false`, the PgBouncer setting). PL/pgSQL plans
 * the statement once per server session and keeps the plan, so behind a pooler, where named
 * prepared statements cannot be used, acquire still skips parsing and planning its large
 * statement: the client sends a small unnamed `SELECT * FROM "job-scheduler_acquire"($1..$9)`.
 * Nothing lives on the client's session, so it works in transaction pooling.
 *
 * The function is one statement (insert or reclaim, atomic, judged by the database clock): the
 * semantics, locks and WAL are the statement's. SECURITY INVOKER (the default): it runs with
 * the caller's privileges on the table and sequence; EXECUTE is granted to PUBLIC as for every
 * new function (where default privileges revoke it, grant EXECUTE to the application's role).
 * Until this migration runs, the lease sends the statement itself.
 */
export class AddJobSchedulerAcquireFunction1764547200005 implements MigrationInterface {
  name = 'AddJobSchedulerAcquireFunction1764547200005';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { table, typeEnum, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    const statement = acquireFunctionStatement(table, `${schemaPrefix}"job-scheduler_fencingToken_seq"`);
    await queryRunner.query(`
CREATE OR REPLACE FUNCTION ${acquireFunctionSignature(`${schemaPrefix}"job-scheduler_acquire"`, typeEnum)}
RETURNS TABLE ("id" uuid, "fencingToken" text, "attempts" integer, "reclaimed" boolean, "status" text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER AS $function$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${statement};
END
$function$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { typeEnum, schemaPrefix } = jobSchedulerTableNames(queryRunner);
    await queryRunner.query(`DROP FUNCTION IF EXISTS ${acquireFunctionSignature(`${schemaPrefix}"job-scheduler_acquire"`, typeEnum)}`);
  }
}
