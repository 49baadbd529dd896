import { createTestDatabase } from '../../support/test-database';
import { startNestContractTarget } from './contract-target';
import { describeLeaseContract } from './lease-contract';

describeLeaseContract({
  name: "named DataSource ('jobs'), the only one in each application",
  start: async () => {
    const database = await createTestDatabase();
    return startNestContractTarget({ database, url: database.url, table: '"job-scheduler"', node: { jobScheduler: { dataSource: 'jobs' } } });
  },
});
