import { hostname } from 'node:os';
import type { DataSource, DataSourceOptions } from 'typeorm';
import { DEFAULT_SHUTDOWN_GRACE_MS, MAX_TIMER_MS } from './job-scheduler.constants';
import { moduleErrors } from './job-scheduler.errors';
import type { LeaseTimingDefaults } from './lease-timing';
import { DEFAULT_STATEMENT_TIMEOUT_MS } from './run/lease-deadline';
import type { LeaseTelemetryOptions } from './telemetry/lease-telemetry';

// The lease module's options, and the checks the service makes of them at boot. Kept below everything that reads them (the service, the inspector,
// retention, the module definition), so that none of those imports another to name them.

/** Module-level retention: finished runs older than these are pruned, once per period, by one node. */
export interface JobRetentionOptions {
  /** Keep SUCCESS runs this long (ms or text like '30d'). Omitted: kept forever. */
  success?: number | string;
  /** Keep FAIL runs this long. Omitted: kept forever. */
  fail?: number | string;
  /** How often to prune, aligned on the epoch (default '1h'). */
  every?: number | string;
  /** The share of a pass spent in prune statements, 0.01 to 1 (default 0.5): `prune`'s `dutyCycle`. */
  dutyCycle?: number;
}

/** Options read at runtime by the service (also what `forRootAsync` factories return). */
export interface JobSchedulerRuntimeOptions {
  /** The owner identity written on rows this node acquires; defaults to `hostname:pid`. */
  nodeId?: string;
  /** Lease timing for acquires that name none; validated at boot. */
  defaults?: LeaseTimingDefaults;
  /** On shutdown: how long to wait for aborted callbacks before releasing their leases. Default 10 s. */
  shutdownGraceMs?: number;
  /**
   * Prune finished runs on a schedule, once per period across all nodes:
   * `{ success: '30d', fail: '90d', every: '1h' }`. The horizon must exceed any catch-up window.
   */
  retention?: JobRetentionOptions;
  /**
   * Named prepared statements for the lease: default true (the fast path). Set false behind
   * PgBouncer in transaction pooling (a mismatch the server reports also turns them off).
   */
  preparedStatements?: boolean;
  /**
   * The bound on one lease statement, pool checkout included (default 5 s). A heartbeat is also
   * bounded by its interval and by the local deadline. Client-side, so it holds behind PgBouncer.
   */
  statementTimeoutMs?: number;
  /**
   * Refuse to grant leases (JobLeaseReplicationError) while the primary streams to standbys
   * without synchronous replication, where a failover could forget them. Default false: the risk
   * is logged once at boot and shown by the health indicator.
   */
  requireSynchronousReplication?: boolean;
  /** prom-client metrics and OpenTelemetry spans of lease operations (each on when installed). */
  telemetry?: LeaseTelemetryOptions;
  /**
   * acquireMany `{ announce: true }` (the scheduler's claims ahead) announces the runs won with
   * NOTIFY and listens for the others' on one more connection per instance (LISTEN), so that an
   * instance does not claim a run another already won. Default: on, off with preparedStatements:
   * false (PgBouncer in transaction pooling passes no notifications). Off: every claim is sent.
   */
  announceClaims?: boolean;
}

/** Options fixed when the module is declared (they shape the module graph). */
export interface JobSchedulerModuleExtras {
  /** Register the module globally. Default true. */
  global?: boolean;
  /** The TypeORM DataSource to use, as given to TypeOrmModule (its name). Default: the default one. */
  dataSource?: string | DataSource | DataSourceOptions;
}

export type JobSchedulerModuleOptions = JobSchedulerRuntimeOptions & JobSchedulerModuleExtras;

// The service's checks of these options at boot: each throws InvalidJobSchedulerModuleOptionsError.

/** `nodeId`: the one given, or `hostname:pid`. */
export const checkNodeId = (nodeId: unknown): string => {
  if (nodeId === undefined) return `${hostname()}:${process.pid}`.slice(0, 256);
  if (typeof nodeId !== 'string' || nodeId.trim() === '' || nodeId.length > 256 || nodeId.includes('\u0000')) {
    throw moduleErrors.nodeId(nodeId);
  }
  return nodeId;
};

export const checkGraceMs = (value: unknown): number => {
  if (value === undefined) return DEFAULT_SHUTDOWN_GRACE_MS;
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > MAX_TIMER_MS) {
    throw moduleErrors.shutdownGraceMs(value);
  }
  return value as number;
};

export const checkStatementTimeoutMs = (value: unknown): number => {
  if (value === undefined) return DEFAULT_STATEMENT_TIMEOUT_MS;
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > MAX_TIMER_MS) {
    throw moduleErrors.statementTimeoutMs(value);
  }
  return value as number;
};

export const checkBoolean = (field: 'requireSynchronousReplication' | 'announceClaims', value: unknown, byDefault = false): boolean => {
  if (value === undefined) return byDefault;
  if (typeof value !== 'boolean') throw moduleErrors.boolean(field, value);
  return value;
};
