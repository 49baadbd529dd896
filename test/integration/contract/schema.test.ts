import { JobSchedulerMigrations } from '../../../src/features';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';
import { startNestContractTarget } from './contract-target';
import { describeLeaseContract } from './lease-contract';

/** The DataSource's `schema` option: the table, its enums and every statement are qualified. */
const SCHEMA = 'lease_jobs';
let database: TestDatabase;

describeLeaseContract(
  {
    name: `schema option ('${SCHEMA}', not public)`,
    start: async () => {
      database = await createTestDatabase({ migrate: false });
      await database.sql(`CREATE SCHEMA "${SCHEMA}"`);
      const migrator = await database.dataSource({ schema: SCHEMA, migrations: [...JobSchedulerMigrations], poolSize: 1 });
      await migrator.runMigrations();
      await migrator.destroy();
      return startNestContractTarget({
        database,
        url: database.url,
        table: `"${SCHEMA}"."job-scheduler"`,
        node: { typeorm: { schema: SCHEMA } },
      });
    },
  },
  (target) => {
    it('keeps the table in its schema and names it in every statement', async () => {
      expect(await database.sql(`SELECT to_regclass('public."job-scheduler"') AS "table"`)).toEqual([{ table: null }]);
      target().counter.reset();
      await target().counted.acquire({ code: 'schema-check', runKey: 'r' });
      expect(target().counter.statements).toHaveLength(1);
      expect(target().counter.statements[0]).toContain(`"${SCHEMA}"."job-scheduler"`);
    });
  },
);
