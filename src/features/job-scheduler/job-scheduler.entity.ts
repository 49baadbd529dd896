import { Column, Entity, Generated, Index, PrimaryColumn, Unique } from 'typeorm';

export enum JobSchedulerStatus {
  RUNNING = 'RUNNING',
  SUCCESS = 'SUCCESS',
  FAIL = 'FAIL',
}

export enum JobSchedulerType {
  INITIAL = 'INITIAL',
  SCHEDULE = 'SCHEDULE',
}

/** The table name, kept from release 1.1 (with its hyphen). */
export const JOB_SCHEDULER_TABLE = 'job-scheduler';

/**
 * One row per logical run `{ type, code, runKey }`. The unique `lockKey` makes the row the lock:
 * whoever inserts or reclaims it owns the run until it finishes or its lease expires.
 *
 * The columns up to `modifiedAt` are those of release 1.1; the others were added in 2.0
 * (see migrations/). Timestamps are written by the database clock only.
 */
@Entity(JOB_SCHEDULER_TABLE)
@Unique('UQ_job_scheduler_lock_key', ['lockKey'])
// ("code", "runKey" COLLATE "C"), created by a migration; synchronize leaves it alone.
@Index('IDX_job_scheduler_code_run_key', { synchronize: false })
// Finished runs by age, for prune: also created by synchronize (the table's storage parameters are not).
@Index('IDX_job_scheduler_created_at', ['createdAt'])
// The take-over scan finds the leases that ran out in the table "job-scheduler_lease_expiry", kept by
// triggers (migration 0010): no index here on a column a heartbeat or a complete changes, so both are HOT.
// The runs of one code, newest first (the dashboard's runs list by job): also created by synchronize.
@Index('IDX_job_scheduler_code_created_at', ['code', 'createdAt'])
export class JobScheduler {
  @PrimaryColumn({ type: 'uuid', default: () => 'gen_random_uuid()', primaryKeyConstraintName: 'PK_job_scheduler_id' })
  id!: string;

  /** `v2:` + base64url SHA-256 of the identity; equals the run's idempotency key. */
  @Column({ type: 'varchar', length: 320 })
  lockKey!: string;

  @Column({ type: 'varchar', length: 64 })
  code!: string;

  @Column({ type: 'varchar', length: 256, nullable: true })
  name!: string | null;

  @Column({ type: 'enum', enum: JobSchedulerType, default: JobSchedulerType.SCHEDULE })
  type!: JobSchedulerType;

  @Column({ type: 'enum', enum: JobSchedulerStatus, default: JobSchedulerStatus.RUNNING })
  status!: JobSchedulerStatus;

  /** The current owner's secret; rotated on every reclaim. */
  @Column({ type: 'uuid', nullable: true })
  ownerToken!: string | null;

  /** Data recorded by complete / fail / release. */
  @Column({ type: 'jsonb', nullable: true })
  data!: unknown;

  @Column({ type: 'timestamptz', default: () => 'CURRENT_TIMESTAMP' })
  createdAt!: Date;

  /** Last write by the owner (acquire, heartbeat, finalize): the lease runs from here. */
  @Column({ type: 'timestamptz', default: () => 'CURRENT_TIMESTAMP' })
  modifiedAt!: Date;

  /** The raw runKey, for operators; never part of the unique key. Null for INITIAL and 1.1 rows. */
  @Column({ type: 'varchar', length: 1024, nullable: true })
  runKey!: string | null;

  /** The lease the current owner asked for. Null on rows written by 1.1. */
  @Column({ type: 'integer', nullable: true })
  leaseMs!: number | null;

  /**
   * Drawn from the sequence "job-scheduler_fencingToken_seq" on insert and on every reclaim:
   * strictly increasing for a run, forever, so an external resource can reject a stale writer.
   */
  @Column({ type: 'bigint' })
  @Generated('increment')
  fencingToken!: string;

  /** How many owners this run has had (1 + reclaims). */
  @Column({ type: 'integer', default: 1 })
  attempts!: number;

  /** The current owner's node identity (host:pid, or the configured nodeId). */
  @Column({ type: 'varchar', length: 256, nullable: true })
  ownerId!: string | null;

  /** When the current owner acquired the run. */
  @Column({ type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  /** When the run was last completed, failed or released. */
  @Column({ type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;

  /** What the previous attempt left when it was reclaimed: its data, or that its lease expired. */
  @Column({ type: 'jsonb', nullable: true })
  lastError!: unknown;
}
