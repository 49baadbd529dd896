import type { QueryRunner } from 'typeorm';

const quote = (identifier: string): string => `"${identifier.replace(/"/g, '""')}"`;
const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/** The table and enum type names, in the DataSource's `schema` when it sets one. */
export const jobSchedulerTableNames = (queryRunner: QueryRunner) => {
  const schema = (queryRunner.connection.options as { schema?: string }).schema;
  const qualify = (name: string) => (schema ? `${quote(schema)}.${quote(name)}` : quote(name));
  return {
    table: qualify('job-scheduler'),
    typeEnum: qualify('job-scheduler_type_enum'),
    statusEnum: qualify('job-scheduler_status_enum'),
    schemaLiteral: schema ? literal(schema) : 'current_schema()',
    tableLiteral: literal('job-scheduler'),
    schemaPrefix: schema ? `${quote(schema)}.` : '',
  };
};
