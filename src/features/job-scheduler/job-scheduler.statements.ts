import { createLeaseStatements, type LeaseStatements } from './job-scheduler.sql';
import { createOccurrenceHistoryStatements, type OccurrenceHistoryStatements } from './operations/occurrence-history.sql';
import { createOperationsStatements, type OperationsStatements } from './operations/operations.sql';
import { createTakeOverStatements, type TakeOverStatements } from './lease-take-over.sql';

/**
 * Every statement the executor runs on the lease table: those that decide who holds a run
 * (job-scheduler.sql.ts), the scheduler's take-over of abandoned occurrences (lease-take-over.sql.ts), the operators' reads and deletes (operations/operations.sql.ts) and the
 * reads of recorded occurrences (operations/occurrence-history.sql.ts).
 */
export interface JobSchedulerStatements extends LeaseStatements, TakeOverStatements, OperationsStatements, OccurrenceHistoryStatements {}

/** Builds the statements for one table. The texts are computed once; each call only binds values. */
export const createJobSchedulerStatements = (
  table: string,
  fencingTokenSequence: string,
  /** The table of lease expiries (see 1764547200010-TrackJobSchedulerLeaseExpiries). */
  expiryTable: string,
  /** The function holding the acquire statement (see 1764547200005-AddJobSchedulerAcquireFunction), if any. */
  acquireFunction?: string,
): JobSchedulerStatements => ({
  ...createOperationsStatements(table, expiryTable),
  ...createOccurrenceHistoryStatements(table),
  ...createLeaseStatements(table, fencingTokenSequence, expiryTable, acquireFunction),
  ...createTakeOverStatements(table, fencingTokenSequence, expiryTable),
});
