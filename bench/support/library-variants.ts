import type { JobSchedulerModuleOptions, JobSchedulerService } from '../../src/features';
import { startNestNode } from '../../test/support/nest-node';
import { BENCH_LEASE_MS, type LeaseVariant, type NodeContext } from './lease-node';

/** One way to configure the library: its name in results and its module options. */
export interface LibrarySetup {
  name: string;
  description: string;
  options: Omit<JobSchedulerModuleOptions, 'nodeId'>;
}

/** The defaults: named prepared statements on the DataSource pool; metrics and spans on as installed here. */
export const SHIPPED: LibrarySetup = {
  name: 'library',
  description:
    'JobSchedulerService through Nest + TypeORM with default options (named prepared statements on the DataSource pg pool; prom-client metrics and OpenTelemetry spans on, as both are installed here)',
  options: {},
};

export const WITHOUT_TELEMETRY: LibrarySetup = {
  name: 'library-no-telemetry',
  description: 'the same, telemetry: { metrics: false, tracing: false }',
  options: { telemetry: { metrics: false, tracing: false } },
};

export const UNNAMED: LibrarySetup = {
  name: 'library-unnamed',
  description: 'the same with preparedStatements: false (unnamed statements: the setting for PgBouncer transaction pooling)',
  options: { preparedStatements: false },
};

/** A node of the library: a Nest application context with TypeORM and JobSchedulerModule. */
export const startLibraryNode = async (context: NodeContext, setup: LibrarySetup): Promise<JobSchedulerService> => {
  const node = await startNestNode(context.url, {
    jobScheduler: { ...setup.options, nodeId: context.nodeId },
    typeorm: { poolSize: context.poolSize },
  });
  context.cleanup.add(node, (started) => started.close());
  return node.jobs;
};

const libraryVariant = (setup: LibrarySetup): LeaseVariant => ({
  name: setup.name,
  description: setup.description,
  start: async (context) => {
    const jobs = await startLibraryNode(context, setup);
    return {
      acquire: async (code, runKey) => {
        const lock = await jobs.acquire({ code, runKey, leaseMs: BENCH_LEASE_MS, heartbeatMs: 0 });
        return lock.acquired ? { complete: () => jobs.complete(lock) } : undefined;
      },
    };
  },
});

export const LIBRARY = libraryVariant(SHIPPED);
export const LIBRARY_WITHOUT_TELEMETRY = libraryVariant(WITHOUT_TELEMETRY);
export const LIBRARY_UNNAMED = libraryVariant(UNNAMED);
