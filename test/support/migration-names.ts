/** The names TypeORM records for the 2.0 schema's migrations, in order: what a fresh database runs. */
export const MIGRATION_NAMES = [
  'CreateJobSchedulerTable1764547200000',
  'UpgradeJobSchedulerTableFrom111764547200001',
  'AddJobSchedulerCodeRunKeyIndex1764547200002',
  'AddJobSchedulerFencingTokenSequence1764547200003',
  'TuneJobSchedulerTableForChurn1764547200004',
  'AddJobSchedulerAcquireFunction1764547200005',
  'AddJobSchedulerRunningIndex1764547200006',
  'CreateJobScheduleTable1764547200007',
  'AddJobPauseTable1764547200008',
  'IndexJobSchedulerLeaseExpiry1764547200009',
  'TrackJobSchedulerLeaseExpiries1764547200010',
  'InsertJobSchedulerLeaseExpiriesWithoutConflictCheck1764547200011',
];
