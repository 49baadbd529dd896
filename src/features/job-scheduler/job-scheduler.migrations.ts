import { CreateJobSchedulerTable1764547200000 } from '../../../migrations/1764547200000-CreateJobSchedulerTable';
import { UpgradeJobSchedulerTableFrom111764547200001 } from '../../../migrations/1764547200001-UpgradeJobSchedulerTableFrom11';
import { AddJobSchedulerCodeRunKeyIndex1764547200002 } from '../../../migrations/1764547200002-AddJobSchedulerCodeRunKeyIndex';
import { AddJobSchedulerFencingTokenSequence1764547200003 } from '../../../migrations/1764547200003-AddJobSchedulerFencingTokenSequence';
import { TuneJobSchedulerTableForChurn1764547200004 } from '../../../migrations/1764547200004-TuneJobSchedulerTableForChurn';
import { AddJobSchedulerAcquireFunction1764547200005 } from '../../../migrations/1764547200005-AddJobSchedulerAcquireFunction';
import { AddJobSchedulerRunningIndex1764547200006 } from '../../../migrations/1764547200006-AddJobSchedulerRunningIndex';
import { CreateJobScheduleTable1764547200007 } from '../../../migrations/1764547200007-CreateJobScheduleTable';
import { AddJobPauseTable1764547200008 } from '../../../migrations/1764547200008-AddJobPauseTable';
import { IndexJobSchedulerLeaseExpiry1764547200009 } from '../../../migrations/1764547200009-IndexJobSchedulerLeaseExpiry';
import { TrackJobSchedulerLeaseExpiries1764547200010 } from '../../../migrations/1764547200010-TrackJobSchedulerLeaseExpiries';
import { InsertJobSchedulerLeaseExpiriesWithoutConflictCheck1764547200011 } from '../../../migrations/1764547200011-InsertJobSchedulerLeaseExpiriesWithoutConflictCheck';

/** The lease's migrations in order, for `migrations: [...JobSchedulerMigrations]` in a DataSource. */
export const JobSchedulerMigrations = [
  CreateJobSchedulerTable1764547200000,
  UpgradeJobSchedulerTableFrom111764547200001,
  AddJobSchedulerCodeRunKeyIndex1764547200002,
  AddJobSchedulerFencingTokenSequence1764547200003,
  TuneJobSchedulerTableForChurn1764547200004,
  AddJobSchedulerAcquireFunction1764547200005,
  AddJobSchedulerRunningIndex1764547200006,
  CreateJobScheduleTable1764547200007,
  AddJobPauseTable1764547200008,
  IndexJobSchedulerLeaseExpiry1764547200009,
  TrackJobSchedulerLeaseExpiries1764547200010,
  InsertJobSchedulerLeaseExpiriesWithoutConflictCheck1764547200011,
] as const;

export {
  AddJobPauseTable1764547200008,
  AddJobSchedulerAcquireFunction1764547200005,
  AddJobSchedulerCodeRunKeyIndex1764547200002,
  AddJobSchedulerFencingTokenSequence1764547200003,
  AddJobSchedulerRunningIndex1764547200006,
  CreateJobScheduleTable1764547200007,
  CreateJobSchedulerTable1764547200000,
  IndexJobSchedulerLeaseExpiry1764547200009,
  InsertJobSchedulerLeaseExpiriesWithoutConflictCheck1764547200011,
  TrackJobSchedulerLeaseExpiries1764547200010,
  TuneJobSchedulerTableForChurn1764547200004,
  UpgradeJobSchedulerTableFrom111764547200001,
};
