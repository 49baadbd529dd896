import type { QueryRunner } from 'typeorm';

/** An identifier, double-quoted for SQL. */
export const quoteIdentifier = (identifier: string): string => `"${identifier.replace(/"/g, '""')}"`;
/** A string literal for SQL. */
export const quoteLiteral = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/** The table and enum type names, in the DataSource's `schema` when it sets one. */
export const jobSchedulerTableNames = (queryRunner: QueryRunner) => {
  const schema = (queryRunner.connection.options as { schema?: string }).schema;
  const qualify = (name: string) => (schema ? `${quoteIdentifier(schema)}.${quoteIdentifier(name)}` : quoteIdentifier(name));
  return {
    table: qualify('job-scheduler'),
    typeEnum: qualify('job-scheduler_type_enum'),
    statusEnum: qualify('job-scheduler_status_enum'),
    schemaLiteral: schema ? quoteLiteral(schema) : 'current_schema()',
    tableLiteral: quoteLiteral('job-scheduler'),
    schemaPrefix: schema ? `${quoteIdentifier(schema)}.` : '',
  };
};

/** The schema the job-scheduler table is in, as the server resolves it (the DataSource's, else the search_path's). */
export const jobSchedulerSchema = async (queryRunner: QueryRunner): Promise<string> => {
  const [{ schema }] = (await queryRunner.query(
    `SELECT n.nspname AS schema FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)`,
    [jobSchedulerTableNames(queryRunner).table],
  )) as Array<{ schema: string }>;
  return schema;
};
