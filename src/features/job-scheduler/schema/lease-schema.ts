import { CreateJobSchedulerTable1764547200000 } from '../../../../migrations/1764547200000-CreateJobSchedulerTable';
import { UpgradeJobSchedulerTableFrom111764547200001 } from '../../../../migrations/1764547200001-UpgradeJobSchedulerTableFrom11';
import { AddJobSchedulerFencingTokenSequence1764547200003 } from '../../../../migrations/1764547200003-AddJobSchedulerFencingTokenSequence';
import type { RequiredRelation } from './schema-check';

/** Columns a table written by 1.x lacks: the upgrade migration adds them ("ownerToken" on a 1.0 table). */
const UPGRADE = UpgradeJobSchedulerTableFrom111764547200001.name;

/**
 * What the lease's statements need: the job-scheduler table with the entity's columns, and its
 * fencing-token sequence. `named` qualifies a name as the statements do (the lease table's schema).
 */
export const leaseSchema = (tableName: string, named: (name: string) => string): RequiredRelation[] => [
  {
    role: 'the job-scheduler table',
    name: named(tableName),
    kind: 'table',
    migration: CreateJobSchedulerTable1764547200000.name,
    columns: {
      id: null,
      lockKey: null,
      code: null,
      name: null,
      type: null,
      status: null,
      ownerToken: UPGRADE,
      data: null,
      createdAt: null,
      modifiedAt: null,
      runKey: UPGRADE,
      leaseMs: UPGRADE,
      fencingToken: UPGRADE,
      attempts: UPGRADE,
      ownerId: UPGRADE,
      startedAt: UPGRADE,
      finishedAt: UPGRADE,
      lastError: UPGRADE,
    },
  },
  {
    role: "the job-scheduler table's fencing-token sequence",
    name: named(`${tableName}_fencingToken_seq`),
    kind: 'sequence',
    migration: AddJobSchedulerFencingTokenSequence1764547200003.name,
  },
];
