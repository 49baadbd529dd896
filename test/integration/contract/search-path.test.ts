import { JobSchedulerMigrations } from '../../../src/features';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';
import { startNestContractTarget } from './contract-target';
import { describeLeaseContract } from './lease-contract';

/**
 * A search_path set on the database (ALTER DATABASE ... SET search_path), not by the application:
 * the server applies it to every new session, so it holds behind a transaction pooler too.
 */
const SCHEMA = 'jobs_path';
let database: TestDatabase;

describeLeaseContract(
  {
    name: `search_path '${SCHEMA}' set on the database`,
    start: async () => {
      database = await createTestDatabase({ migrate: false });
      await database.sql(`CREATE SCHEMA "${SCHEMA}"`);
      await database.sql(`ALTER DATABASE "${database.name}" SET search_path = "${SCHEMA}"`);
      const migrator = await database.dataSource({ migrations: [...JobSchedulerMigrations], poolSize: 1 });
      await migrator.runMigrations();
      await migrator.destroy();
      return startNestContractTarget({ database, url: database.url, table: '"job-scheduler"' });
    },
  },
  () => {
    it(`puts the table in ${SCHEMA}, not in public`, async () => {
      expect(
        await database.sql(`SELECT to_regclass('"${SCHEMA}"."job-scheduler"') IS NOT NULL AS here, to_regclass('public."job-scheduler"') AS public`),
      ).toEqual([{ here: true, public: null }]);
    });
  },
);
