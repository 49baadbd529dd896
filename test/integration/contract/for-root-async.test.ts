import { createTestDatabase } from '../../support/test-database';
import { startNestContractTarget } from './contract-target';
import { describeLeaseContract } from './lease-contract';

describeLeaseContract({
  name: 'JobSchedulerModule.forRootAsync (options from a factory)',
  start: async () => {
    const database = await createTestDatabase();
    return startNestContractTarget({ database, url: database.url, table: '"job-scheduler"', node: { async: true } });
  },
});
