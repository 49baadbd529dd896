import { createTestDatabase } from '../../support/test-database';
import { startNestContractTarget } from './contract-target';
import { describeLeaseContract } from './lease-contract';

describeLeaseContract({
  name: 'default DataSource, JobSchedulerModule.forRoot',
  start: async () => {
    const database = await createTestDatabase();
    return startNestContractTarget({ database, url: database.url, table: '"job-scheduler"' });
  },
});
