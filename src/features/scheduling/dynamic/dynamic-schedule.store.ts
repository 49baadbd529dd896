import { JobSchedulerExecutor } from '../../job-scheduler/job-scheduler.executor';
import type { JobSchedulerRuntimeOptions } from '../../job-scheduler/job-scheduler.options';
import type { JobSchedulerDatabase } from '../../job-scheduler/lease-database';
import { checkSchemaAtBoot, type RequiredRelation } from '../../job-scheduler/schema/schema-check';
import { CreateJobScheduleTable1764547200007 } from '../../../../migrations/1764547200007-CreateJobScheduleTable';
import type { SchedulerLogger } from '../scheduler-ports';
import {
  createDynamicScheduleStatements,
  type DynamicScheduleStatements,
  type ScheduleListParameters,
  type ScheduleRow,
  type StoredScheduleRow,
} from './dynamic-schedule.sql';

/** The columns the statements of dynamic schedules name (migration CreateJobScheduleTable1764547200007). */
const SCHEDULE_COLUMNS = [
  'id',
  'handler',
  'cron',
  'everyMs',
  'timeZone',
  'data',
  'tenantId',
  'enabled',
  'overlap',
  'missed',
  'timeoutMs',
  'leaseMs',
  'version',
  'removedAt',
  'createdAt',
  'modifiedAt',
] as const;

/** The table of dynamic schedules, next to the lease's table (same DataSource, same schema, same statement settings). */
export class DynamicScheduleStore {
  private readonly executor: JobSchedulerExecutor;
  private readonly statements: DynamicScheduleStatements;

  constructor(database: JobSchedulerDatabase, options: Pick<JobSchedulerRuntimeOptions, 'preparedStatements' | 'statementTimeoutMs'> = {}) {
    this.executor = new JobSchedulerExecutor(database, { preparedStatements: options.preparedStatements, statementTimeoutMs: options.statementTimeoutMs });
    this.statements = createDynamicScheduleStatements(this.executor.tableNamed('job-schedule'), this.executor.tableNamed('job-schedule_version_seq'));
  }

  /** At boot: fails with JobSchedulerSchemaError when the schedules' table, a column or its version sequence is missing. */
  checkSchema(logger: SchedulerLogger): Promise<void> {
    const migration = CreateJobScheduleTable1764547200007.name;
    const columns = Object.fromEntries(SCHEDULE_COLUMNS.map((column) => [column, null]));
    const relations: RequiredRelation[] = [
      { role: 'the dynamic schedules table', name: this.executor.tableNamed('job-schedule'), kind: 'table', migration, columns },
      { role: "the dynamic schedules' version sequence", name: this.executor.tableNamed('job-schedule_version_seq'), kind: 'sequence', migration },
    ];
    return checkSchemaAtBoot(this.executor, relations, logger);
  }

  async upsert(row: ScheduleRow): Promise<StoredScheduleRow> {
    const [stored] = await this.executor.rows<StoredScheduleRow>(this.statements.upsert(row));
    return stored;
  }

  /** Upserts distinct rows in one statement: the stored rows, in no particular order. */
  async upsertMany(rows: readonly ScheduleRow[]): Promise<StoredScheduleRow[]> {
    if (rows.length === 0) return [];
    return this.executor.rows<StoredScheduleRow>(this.statements.upsertMany(rows));
  }

  /** The tombstone's version, or null when there was no such schedule. */
  async remove(id: string): Promise<string | null> {
    const [row] = await this.executor.rows<{ version: string }>(this.statements.remove(id));
    return row?.version ?? null;
  }

  async setEnabled(id: string, enabled: boolean): Promise<StoredScheduleRow | null> {
    const [row] = await this.executor.rows<StoredScheduleRow>(this.statements.setEnabled(id, enabled));
    return row ?? null;
  }

  async get(id: string): Promise<StoredScheduleRow | null> {
    const [row] = await this.executor.rows<StoredScheduleRow>(this.statements.get(id));
    return row ?? null;
  }

  /** Of these ids, those of schedules stored and not removed. */
  async live(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.executor.rows<{ id: string }>(this.statements.live(ids));
    return new Set(rows.map((row) => row.id));
  }

  list(parameters: ScheduleListParameters): Promise<StoredScheduleRow[]> {
    return this.executor.rows<StoredScheduleRow>(this.statements.list(parameters));
  }

  changesSince(version: string, limit: number): Promise<StoredScheduleRow[]> {
    return this.executor.rows<StoredScheduleRow>(this.statements.changesSince(version, limit));
  }

  async currentVersion(): Promise<string> {
    const [row] = await this.executor.rows<{ version: string }>(this.statements.currentVersion());
    return row.version;
  }
}
