import { JOB_SCHEDULER_CREATED_AT_INDEX, JOB_SCHEDULER_STORAGE_PARAMETERS } from '../../migrations/1764547200004-TuneJobSchedulerTableForChurn';
import { JobSchedulerMigrations, TuneJobSchedulerTableForChurn1764547200004 } from '../../src/features';

/** The lease table as a given prefix of the library's migrations leaves it. */
export interface TableSetup {
  name: string;
  description: string;
  migrations: ReadonlyArray<(typeof JobSchedulerMigrations)[number]>;
}

const TUNING = JobSchedulerMigrations.findIndex((migration) => migration === TuneJobSchedulerTableForChurn1764547200004);

export const BEFORE_TUNING: TableSetup = {
  name: 'before 0004',
  description: `migrations up to 0003 only: fillfactor 100, the server's autovacuum settings, no ${JOB_SCHEDULER_CREATED_AT_INDEX} (prune reads the whole table)`,
  migrations: JobSchedulerMigrations.slice(0, TUNING),
};

export const TUNED: TableSetup = {
  name: 'with 0004',
  description: `migrations up to TuneJobSchedulerTableForChurn1764547200004: ${JOB_SCHEDULER_STORAGE_PARAMETERS.map(([name, value]) => `${name}=${value}`).join(', ')}, and ${JOB_SCHEDULER_CREATED_AT_INDEX}`,
  migrations: JobSchedulerMigrations.slice(0, TUNING + 1),
};

export const SHIPPED_TABLE: TableSetup = {
  name: 'every migration',
  description:
    "every migration of the library (the table an application gets): since 0010 the leases' expiries in a table of their own (kept by triggers) and fillfactor 50",
  migrations: JobSchedulerMigrations,
};
