import { JobSchedulerService } from '../../src/features';
import type { TestDatabase, TestDataSourceOptions } from './test-database';

/** `count` nodes, each a JobSchedulerService on a DataSource (a pool) of its own. */
export const startLeaseNodes = async (database: TestDatabase, count: number, extra: TestDataSourceOptions = {}): Promise<JobSchedulerService[]> =>
  Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const dataSource = await database.dataSource({ poolSize: 2, ...extra });
      return new JobSchedulerService(dataSource, { nodeId: `node-${index}` });
    }),
  );

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
