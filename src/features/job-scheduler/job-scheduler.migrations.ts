import { CreateJobSchedulerTable1764547200000 } from '../../../migrations/1764547200000-CreateJobSchedulerTable';
import { UpgradeJobSchedulerTableFrom111764547200001 } from '../../../migrations/1764547200001-UpgradeJobSchedulerTableFrom11';

/** The lease's migrations in order, for `migrations: [...JobSchedulerMigrations]` in a DataSource. */
export const JobSchedulerMigrations = [
  CreateJobSchedulerTable1764547200000,
  UpgradeJobSchedulerTableFrom111764547200001,
] as const;

export { CreateJobSchedulerTable1764547200000, UpgradeJobSchedulerTableFrom111764547200001 };
