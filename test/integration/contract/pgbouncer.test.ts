import { Client } from 'pg';
import { findPgBouncer, type PgBouncer, startPgBouncer } from '../../support/pgbouncer';
import { createTestDatabase, serverUrl, type TestDatabase } from '../../support/test-database';
import { startNestContractTarget } from './contract-target';
import { describeLeaseContract } from './lease-contract';

/**
 * Behind PgBouncer in transaction pooling mode, as production PostgreSQL often is: consecutive
 * statements of one client may run on different server sessions, so nothing may rely on session
 * state. Two server connections serve every node. Skipped (with the reason) where pgbouncer is
 * not installed; CI installs it and must run it.
 */
const SERVER_CONNECTIONS = 2;

/** A command on PgBouncer's admin console (simple protocol, one connection). */
const consoleQuery = async (url: string, command: string): Promise<Array<Record<string, unknown>>> => {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(command)).rows as Array<Record<string, unknown>>;
  } finally {
    await client.end();
  }
};
let bouncer: PgBouncer | undefined;
let database: TestDatabase;

const skipReason = (): string | undefined => {
  if (findPgBouncer()) return undefined;
  if (process.env.CI) throw new Error('CI must run the PgBouncer configuration, but pgbouncer is not installed (.ci/run installs it)');
  return 'pgbouncer is not installed here (apt-get install pgbouncer); CI runs this configuration';
};

describeLeaseContract(
  {
    name: 'behind PgBouncer 1.18, pool_mode = transaction',
    skipReason,
    transactionPooler: true,
    start: async () => {
      database = await createTestDatabase();
      const started = await startPgBouncer(serverUrl(), { poolMode: 'transaction', poolSize: SERVER_CONNECTIONS });
      bouncer = started;
      return startNestContractTarget({
        database,
        url: started.url(database.url),
        table: '"job-scheduler"',
        // What the README tells PgBouncer users (before 1.21, or without max_prepared_statements).
        node: { jobScheduler: { preparedStatements: false } },
        onClose: () => started.stop(),
      });
    },
  },
  (target) => {
    it(`multiplexes every node onto at most ${SERVER_CONNECTIONS} server connections`, async () => {
      const admin = (command: string) => consoleQuery(bouncer?.adminUrl ?? '', command);
      const nodes = [...target().nodes, target().counted];
      await Promise.all(nodes.flatMap((node, index) => [0, 1, 2].map((run) => node.acquire({ code: 'bouncer', runKey: `${index}-${run}` }))));
      const [pool] = (await admin('SHOW POOLS')).filter((row) => row.database === database.name);
      expect(pool).toMatchObject({ pool_mode: 'transaction' });
      const clients = (await admin('SHOW CLIENTS')).filter((row) => row.database === database.name);
      const servers = (await admin('SHOW SERVERS')).filter((row) => row.database === database.name);
      expect(clients.length).toBeGreaterThan(SERVER_CONNECTIONS);
      expect(servers.length).toBeLessThanOrEqual(SERVER_CONNECTIONS);
    });
  },
);
