import type { DataSource } from 'typeorm';
import { JobRetention } from './operations/job-retention';
import { JobRunsInspector } from './operations/job-runs.inspector';
import type { JobSchedulerRuntimeOptions } from './job-scheduler.options';
import { JobSchedulerService } from './job-scheduler.service';
import type { JobSchedulerPoolSource } from './lease-database';

/** The lease without Nest: the same service, its inspector, and close(). */
export interface StandaloneJobScheduler {
  /** acquire, heartbeat, complete, fail, release, runExclusive, keepAlive, prune, replicationStatus. */
  jobs: JobSchedulerService;
  /** Read-only views of the runs. */
  runs: JobRunsInspector;
  /**
   * As an application shutting down: stops retention, aborts running callbacks' signals, waits up
   * to `shutdownGraceMs`, releases the leases still held. The pool or DataSource stays yours to
   * close afterwards.
   */
  close(): Promise<void>;
}

/**
 * The lease for scripts, Express apps and workers without Nest, on a TypeORM DataSource (with the
 * JobScheduler entity) or a node-postgres Pool of your own, with the module's options (nodeId,
 * defaults, retention, statementTimeoutMs, requireSynchronousReplication, …) and its guarantees.
 * It reads the replication settings once, as the module does at boot.
 *
 *   const { jobs, close } = await createJobScheduler({ pool }, { nodeId: 'worker-1' });
 */
export const createJobScheduler = async (
  source: { dataSource: DataSource } | JobSchedulerPoolSource,
  options: JobSchedulerRuntimeOptions = {},
): Promise<StandaloneJobScheduler> => {
  const database = 'dataSource' in source ? source.dataSource : source;
  const jobs = new JobSchedulerService(database, options);
  const runs = new JobRunsInspector(database, options);
  const retention = new JobRetention(jobs, runs, options);
  await jobs.onApplicationBootstrap();
  await retention.onApplicationBootstrap();
  let closed: Promise<void> | undefined;
  return {
    jobs,
    runs,
    close: () => {
      closed ??= (async () => {
        retention.beforeApplicationShutdown();
        await jobs.beforeApplicationShutdown();
      })();
      return closed;
    },
  };
};
