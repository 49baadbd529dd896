import { schemaErrors } from '../job-scheduler.errors';
import type { JobSchedulerExecutor } from '../job-scheduler.executor';
import type { SqlStatement } from '../job-scheduler.sql';

/**
 * A table or sequence the library reads or writes, with the migration that creates it and, for a
 * table, the columns its statements name (each with the migration that adds it, when another one
 * does: a table written by an older release lacks those).
 */
export interface RequiredRelation {
  /** What it is, for people: "the job-scheduler table", "the pause table". */
  role: string;
  /** As the statements name it: quoted, with its schema when it has one (qualifiedTableName). */
  name: string;
  kind: 'table' | 'sequence';
  /** The migration class that creates it (JobSchedulerMigrations holds every one). */
  migration: string;
  /** The columns the statements name, each with the migration that adds it when it is not `migration`. */
  columns?: Readonly<Record<string, string | null>>;
  /** Another way out than the migration, when there is one ("or pass pauses: false"). */
  otherwise?: string;
}

/** One thing missing: a relation (column undefined), or one column of a table that exists. */
export interface MissingSchemaPart {
  role: string;
  name: string;
  kind: 'table' | 'sequence';
  column?: string;
  migration: string;
  otherwise?: string;
}

interface RelationRow {
  name: string;
  relkind: string | null;
  columns: string[] | null;
}

/**
 * One statement for every relation: whether each exists (as the statements would find it: the
 * same quoted, qualified name, resolved on the same search_path) and, for a table, its columns.
 * Reads the catalogs only: no privilege on the relations themselves is needed, nothing is locked.
 */
export const schemaCheckStatement = (relations: readonly RequiredRelation[]): SqlStatement => ({
  operation: 'schema-check',
  text: `SELECT r.name, c.relkind::text AS relkind,
  CASE WHEN c.oid IS NULL THEN NULL ELSE ARRAY(
    SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  ) END AS columns
FROM unnest($1::text[]) AS r(name)
LEFT JOIN pg_class c ON c.oid = to_regclass(r.name)`,
  values: [relations.map((relation) => relation.name)],
});

const KINDS: Readonly<Record<RequiredRelation['kind'], readonly string[]>> = { table: ['r', 'p'], sequence: ['S'] };

/** What the answer of schemaCheckStatement says is missing, in the order the relations were given. */
export const missingSchemaParts = (relations: readonly RequiredRelation[], rows: readonly RelationRow[]): MissingSchemaPart[] => {
  const found = new Map(rows.map((row) => [row.name, row]));
  return relations.flatMap((relation): MissingSchemaPart[] => {
    const { role, name, kind, migration, otherwise } = relation;
    const part = { role, name, kind, migration, ...(otherwise === undefined ? {} : { otherwise }) };
    const row = found.get(name);
    if (!row || row.relkind === null || !KINDS[kind].includes(row.relkind)) return [part];
    const present = new Set(row.columns ?? []);
    return Object.entries(relation.columns ?? {})
      .filter(([column]) => !present.has(column))
      .map(([column, addedBy]) => ({ ...part, column, migration: addedBy ?? migration }));
  });
};

/** One line per missing part: "the pause table "job-scheduler-pause" (migration AddJobPauseTable1764547200008)". */
export const describeMissingPart = (part: MissingSchemaPart): string => {
  const otherwise = part.otherwise === undefined ? '' : `, ${part.otherwise}`;
  return part.column === undefined
    ? `${part.role} ${part.name} does not exist (migration ${part.migration}${otherwise})`
    : `${part.role} ${part.name} has no column "${part.column}" (migration ${part.migration}${otherwise})`;
};

/**
 * At boot (a module's onModuleInit, before any timer starts): fails with JobSchedulerSchemaError,
 * naming every missing table, column and sequence with its migration, once. A check the database
 * could not answer (unreachable, no answer in time) does not stop the boot: it is logged, and the
 * statements report what they meet.
 */
export const checkSchemaAtBoot = async (
  executor: Pick<JobSchedulerExecutor, 'rows'>,
  relations: readonly RequiredRelation[],
  logger: { warn(message: string): void },
): Promise<void> => {
  let rows: RelationRow[];
  try {
    rows = await executor.rows<RelationRow>(schemaCheckStatement(relations));
  } catch (error) {
    logger.warn(`Could not check at boot that the database has the job scheduler's tables: ${error instanceof Error ? error.message : String(error)}`);
    return;
  }
  const missing = missingSchemaParts(relations, rows);
  if (missing.length > 0) throw schemaErrors.missing(missing, missing.map(describeMissingPart));
};
