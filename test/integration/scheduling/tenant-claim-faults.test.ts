import { type JobRunRecord, JobSchedulerService } from '../../../src/features';
import { JobScheduleEngine } from '../../../src/features/scheduling/job-schedule-engine';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { systemTimers } from '../../../src/features/scheduling/scheduler-ports';
import { sleep } from '../../support/lease-nodes';
import { StatementCounter } from '../../support/statement-counter';
import { TcpProxy } from '../../support/tcp-proxy';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

let database: TestDatabase;
let proxy: TcpProxy | undefined;
let engine: JobScheduleEngine | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await engine?.stop();
  await proxy?.close();
  engine = undefined;
  proxy = undefined;
});
afterAll(async () => {
  await database.drop();
});

const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };
const TENANTS = Array.from({ length: 12 }, (_, index) => `tenant-${String(index).padStart(2, '0')}`);

/**
 * The claim of a per-tenant occurrence's tenants reaches the database and commits, and its answer
 * is lost (the proxy drops what the server says, then the connection). Before the fix, the
 * tenants of that statement were recorded JOB_LEASE_UNAVAILABLE and their rows stayed RUNNING
 * under tokens nobody knew, for the take-over a lease later (here: never, no take-over runs). The
 * claim is now sent once more under the owner tokens it named, and gets those tenants back.
 */
describe('a tenant claim whose answer is lost', () => {
  it('is sent again under the same owner tokens: every tenant runs once, on time, none recorded unavailable', async () => {
    proxy = TcpProxy.forUrl(database.url);
    const url = await proxy.start(database.url);
    const counter = new StatementCounter();
    const dataSource = await database.dataSource({ url, logger: counter, logging: true, poolSize: 5 });
    const jobs = new JobSchedulerService(dataSource, { nodeId: 'tenants-a', statementTimeoutMs: 2_000 });
    const name = 'billing.lost-answer';
    const dueAt = Date.now() + 2_500;
    const records: JobRunRecord[] = [];
    const ran: Array<{ tenantId: string; at: number }> = [];
    engine = new JobScheduleEngine({ timers: systemTimers, lease: jobs, logger: silent, tenants: { listTenants: () => TENANTS } });
    const declared = checkJobDeclaration(name, { every: '1h', tenancy: 'per-tenant', tenantConcurrency: 4 });
    engine.register({
      declaration: { ...declared, schedule: { description: 'once', next: (after) => (after < dueAt ? dueAt : null) } },
      enabled: true,
      handler: async ({ tenantId }) => {
        ran.push({ tenantId: tenantId as string, at: Date.now() });
        await sleep(20);
      },
    });
    engine.onRun((record) => records.push(record));
    await engine.start();
    // Connections opened beforehand: one opened while the answers are dropped would hang until the cut.
    await Promise.all(Array.from({ length: 5 }, () => dataSource.query('SELECT pg_sleep(0.05)')));

    await sleep(dueAt - 300 - Date.now());
    proxy.mute();
    // The first claim (the slots' 4 tenants) reaches the database and commits; its answer is
    // dropped. Its rows, seen on a connection of the test's own, are the cue for the cut.
    let committedUnseen = 0;
    for (let waited = 0; committedUnseen === 0; waited += 50) {
      if (waited > 15_000) throw new Error('the first claim never committed');
      await sleep(50);
      [{ count: committedUnseen }] = await database.sql<{ count: number }>('SELECT count(*)::int AS count FROM "job-scheduler" WHERE code = $1', [name]);
    }
    const cutAt = Date.now();
    proxy.cut();
    proxy.unmute();
    proxy.restore();
    for (let waited = 0; records.length < TENANTS.length; waited += 50) {
      if (waited > 20_000) throw new Error(`${records.length} of ${TENANTS.length} tenants recorded`);
      await sleep(50);
    }

    // The lost answer did happen: the first claim's rows were there before the cut.
    expect(committedUnseen).toBeGreaterThanOrEqual(1);
    const rows = await database.sql<{ runKey: string; status: string; attempts: number }>(
      'SELECT "runKey", status::text AS status, attempts FROM "job-scheduler" WHERE code = $1 ORDER BY "runKey"',
      [name],
    );

    // Every tenant once, each row SUCCESS on its first attempt, nothing recorded unavailable.
    expect(rows).toHaveLength(TENANTS.length);
    expect(rows.every((row) => row.status === 'SUCCESS' && row.attempts === 1)).toBe(true);
    expect(ran.map((run) => run.tenantId).sort()).toEqual(TENANTS);
    expect(records.map((record) => record.errorCode ?? record.outcome)).toEqual(TENANTS.map(() => 'succeeded'));
    // On time: seconds after the cut at most (the retry 250 ms after it), not a lease (60 s) later.
    expect(Math.max(...ran.map((run) => run.at)) - cutAt).toBeLessThan(10_000);
    // By the claim sent again, naming its tokens (the statement with `mine`).
    expect(counter.statements.filter((statement) => statement.startsWith('WITH candidate') && statement.includes('mine AS')).length).toBeGreaterThanOrEqual(1);
  }, 40_000);
});
