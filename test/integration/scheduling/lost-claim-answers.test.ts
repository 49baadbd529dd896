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
 * One instance behind a proxy, one job due once at `dueAt`, claimed at its instant (per-tenant
 * jobs always are; a global one with claimAheadMs 0). The claim reaches the database and commits,
 * and its answer is lost: the proxy drops what the server says, then the connections. Before the
 * fix, the runs of that claim were recorded JOB_LEASE_UNAVAILABLE and their rows stayed RUNNING
 * under tokens nobody knew, for the take-over a lease later (here: never, no take-over runs). The
 * claim is now sent once more, 250 ms later, under the owner tokens it named, and gets them back.
 */
const runThroughLostAnswer = async (name: string, options: Record<string, unknown>, expectedRuns: number) => {
  proxy = TcpProxy.forUrl(database.url);
  const url = await proxy.start(database.url);
  const counter = new StatementCounter();
  const dataSource = await database.dataSource({ url, logger: counter, logging: true, poolSize: 5 });
  const jobs = new JobSchedulerService(dataSource, { nodeId: 'lost-answer', statementTimeoutMs: 2_000 });
  const dueAt = Date.now() + 2_500;
  const records: JobRunRecord[] = [];
  const ran: Array<{ tenantId?: string; at: number }> = [];
  engine = new JobScheduleEngine({ timers: systemTimers, lease: jobs, logger: silent, claimAheadMs: 0, tenants: { listTenants: () => TENANTS } });
  const declared = checkJobDeclaration(name, { every: '1h', ...options });
  engine.register({
    declaration: { ...declared, schedule: { description: 'once', next: (after) => (after < dueAt ? dueAt : null) } },
    enabled: true,
    handler: async ({ tenantId }) => {
      ran.push({ tenantId, at: Date.now() });
      await sleep(20);
    },
  });
  engine.onRun((record) => records.push(record));
  await engine.start();
  // Connections opened beforehand: one opened while the answers are dropped would hang until the cut.
  await Promise.all(Array.from({ length: 5 }, () => dataSource.query('SELECT pg_sleep(0.05)')));

  await sleep(dueAt - 300 - Date.now());
  proxy.mute();
  // The claim reaches the database and commits; its answer is dropped. Its rows, seen on a
  // connection of the test's own, are the cue for the cut.
  let committedUnseen = 0;
  for (let waited = 0; committedUnseen === 0; waited += 50) {
    if (waited > 15_000) throw new Error('the claim never committed');
    await sleep(50);
    [{ count: committedUnseen }] = await database.sql<{ count: number }>('SELECT count(*)::int AS count FROM "job-scheduler" WHERE code = $1', [name]);
  }
  const cutAt = Date.now();
  proxy.cut();
  proxy.unmute();
  proxy.restore();
  for (let waited = 0; records.length < expectedRuns; waited += 50) {
    if (waited > 20_000) throw new Error(`${records.length} of ${expectedRuns} runs recorded`);
    await sleep(50);
  }
  const rows = await database.sql<{ status: string; attempts: number }>('SELECT status::text AS status, attempts FROM "job-scheduler" WHERE code = $1', [name]);
  const claimedAgain = counter.statements.filter((statement) => statement.startsWith('WITH candidate') && statement.includes('mine AS')).length;
  return { committedUnseen, cutAt, rows, records, ran, claimedAgain };
};

describe('a claim at the instant whose answer is lost', () => {
  it("of a per-tenant occurrence's tenants is sent again under the same owner tokens: every tenant runs once, on time, none recorded unavailable", async () => {
    const { committedUnseen, cutAt, rows, records, ran, claimedAgain } = await runThroughLostAnswer(
      'billing.lost-answer',
      { tenancy: 'per-tenant', tenantConcurrency: 4 },
      TENANTS.length,
    );
    // The lost answer did happen: the first claim's rows were there before the cut.
    expect(committedUnseen).toBeGreaterThanOrEqual(1);
    // Every tenant once, each row SUCCESS on its first attempt, nothing recorded unavailable.
    expect(rows).toHaveLength(TENANTS.length);
    expect(rows.every((row) => row.status === 'SUCCESS' && row.attempts === 1)).toBe(true);
    expect(ran.map((run) => run.tenantId).sort()).toEqual(TENANTS);
    expect(records.map((record) => record.errorCode ?? record.outcome)).toEqual(TENANTS.map(() => 'succeeded'));
    // On time: seconds after the cut at most (the retry 250 ms after it), not a lease (60 s) later.
    expect(Math.max(...ran.map((run) => run.at)) - cutAt).toBeLessThan(10_000);
    // By the claim sent again, naming its tokens (the statement with `mine`).
    expect(claimedAgain).toBeGreaterThanOrEqual(1);
  }, 40_000);

  it('of a global job claimed at its instant (claimAheadMs 0) is sent again under the same owner token: it runs once, on time, recorded succeeded', async () => {
    const { committedUnseen, cutAt, rows, records, ran, claimedAgain } = await runThroughLostAnswer('reports.lost-answer', {}, 1);
    expect(committedUnseen).toBe(1);
    expect(rows).toEqual([{ status: 'SUCCESS', attempts: 1 }]);
    expect(ran).toHaveLength(1);
    expect(records.map((record) => [record.trigger, record.errorCode ?? record.outcome])).toEqual([['schedule', 'succeeded']]);
    expect(ran[0].at - cutAt).toBeLessThan(10_000);
    expect(claimedAgain).toBe(1);
  }, 40_000);
});
