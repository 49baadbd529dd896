import { JobSchedulerExecutor, type ExecutorOptions } from '../../job-scheduler/job-scheduler.executor';
import { qualifiedTableName } from '../../job-scheduler/job-scheduler.sql';
import { type JobSchedulerDatabase, leaseDatabaseOf } from '../../job-scheduler/lease-database';
import { checkSchemaAtBoot, type RequiredRelation } from '../../job-scheduler/schema/schema-check';
import { AddJobPauseTable1764547200008 } from '../../../../migrations/1764547200008-AddJobPauseTable';
import { createJobPauseStatements, type JobPauseRow, type JobPauseStatements } from './job-pauses.sql';
import type { SchedulerLogger } from '../scheduler-ports';

/** A declared job an operator paused: no instance fires its timers until it is resumed. */
export interface JobPause {
  name: string;
  /** Who paused it (what the dashboard's `authorize` returned). */
  pausedBy: string;
  pausedAt: Date;
}

/** How often each instance reads the pause table, by default. */
export const DEFAULT_PAUSE_POLL_MS = 5_000;

/** The pause table (migration AddJobPauseTable1764547200008), next to the lease table: `<lease table>-pause`. */
export class JobPauseStore {
  private readonly executor: JobSchedulerExecutor;
  private readonly statements: JobPauseStatements;

  private readonly table: string;

  constructor(source: JobSchedulerDatabase, options: ExecutorOptions = {}) {
    this.executor = new JobSchedulerExecutor(source, options);
    const { tableName, schema } = leaseDatabaseOf(source);
    this.table = qualifiedTableName(`${tableName}-pause`, schema);
    this.statements = createJobPauseStatements(this.table);
  }

  /** At boot: fails with JobSchedulerSchemaError when the pause table or one of its columns is missing. */
  checkSchema(logger: SchedulerLogger): Promise<void> {
    const table: RequiredRelation = {
      role: 'the pause table',
      name: this.table,
      kind: 'table',
      migration: AddJobPauseTable1764547200008.name,
      columns: { code: null, pausedBy: null, pausedAt: null },
      otherwise: 'or SchedulingModule.forRoot({ pauses: false }) to go without runtime pauses',
    };
    return checkSchemaAtBoot(this.executor, [table], logger);
  }

  async list(): Promise<JobPause[]> {
    const rows = await this.executor.rows<JobPauseRow>(this.statements.list());
    return rows.map((row) => ({ name: row.code, pausedBy: row.pausedBy, pausedAt: row.pausedAt }));
  }

  /** true when this call paused it (false: it was paused already). */
  async pause(name: string, pausedBy: string): Promise<boolean> {
    return (await this.executor.rows(this.statements.pause(name, pausedBy))).length === 1;
  }

  /** true when this call resumed it (false: it was not paused). */
  async resume(name: string): Promise<boolean> {
    return (await this.executor.rows(this.statements.resume(name))).length === 1;
  }
}

/**
 * Reads the pause table once at start (before the timers are armed), then every `periodMs`: one
 * statement per poll. A failed read keeps the last known pauses and warns once until a read
 * succeeds again (a database that lacks the migration warns once, then stays quiet).
 */
export class JobPausePoller {
  private timer?: NodeJS.Timeout;
  private running = false;
  private stopped = false;
  private warned = false;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Pick<JobPauseStore, 'list'>,
    private readonly apply: (paused: ReadonlyMap<string, JobPause>) => void,
    private readonly logger: SchedulerLogger,
    private readonly periodMs: number = DEFAULT_PAUSE_POLL_MS,
  ) {}

  async start(): Promise<void> {
    this.running = true;
    await this.pollNow();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inFlight;
  }

  /** Reads the pauses now and applies them (also after this instance paused or resumed a job; also before start). */
  pollNow(): Promise<void> {
    const poll = this.inFlight.then(() => this.poll());
    this.inFlight = poll;
    return poll;
  }

  private async poll(): Promise<void> {
    try {
      const pauses = await this.store.list();
      if (this.stopped) return;
      this.warned = false;
      this.apply(new Map(pauses.map((pause) => [pause.name, pause])));
    } catch (error) {
      if (this.stopped || this.warned) return;
      this.warned = true;
      this.logger.warn(`Could not read the paused jobs (run the migration AddJobPauseTable1764547200008?); keeping the last known pauses: ${String(error)}`);
    }
  }

  private schedule(): void {
    if (!this.running) return;
    this.timer = setTimeout(() => void this.pollNow().finally(() => this.schedule()), this.periodMs);
    this.timer.unref();
  }
}
