import { CreateJobSchedulerTable1764547200000 } from '../../../migrations/1764547200000-CreateJobSchedulerTable';
import { UpgradeJobSchedulerTableFrom111764547200001 } from '../../../migrations/1764547200001-UpgradeJobSchedulerTableFrom11';
import { AddJobSchedulerCodeRunKeyIndex1764547200002 } from '../../../migrations/1764547200002-AddJobSchedulerCodeRunKeyIndex';

/** The lease's migrations in order, for `migrations: [...JobSchedulerMigrations]` in a DataSource. */
export const JobSchedulerMigrations = [
  CreateJobSchedulerTable1764547200000,
  UpgradeJobSchedulerTableFrom111764547200001,
  AddJobSchedulerCodeRunKeyIndex1764547200002,
] as const;

export {
  AddJobSchedulerCodeRunKeyIndex1764547200002,
  CreateJobSchedulerTable1764547200000,
  UpgradeJobSchedulerTableFrom111764547200001,
};
