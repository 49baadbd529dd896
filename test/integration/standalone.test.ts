import { Pool } from 'pg';
import { createJobScheduler, JobSchedulerStatus, JobShutdownError, type StandaloneJobScheduler } from '../../src/features';
import { sleep } from '../support/lease-nodes';
import { captureNestLogs } from '../support/nest-log-capture';
import { createTestDatabase, type TestDatabase } from '../support/test-database';
import { aborted } from '../support/abortable-work';

/**
 * The lease without Nest, as a script, an Express app or a worker uses it: createJobScheduler on a
 * node-postgres Pool of its own or on a TypeORM DataSource, several of them racing as independent
 * nodes, and close() behaving as an application shutdown.
 */
let database: TestDatabase;
const pools: Pool[] = [];
const opened: StandaloneJobScheduler[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(opened.map((scheduler) => scheduler.close()));
  await Promise.all(pools.map((pool) => pool.end()));
  await database.drop();
});

const onPool = async (nodeId: string, options = {}) => {
  const pool = new Pool({ connectionString: database.url, max: 2, connectionTimeoutMillis: 5_000 });
  // As docs/lease.md asks: pool.end() resolves before its clients' sockets close, and the drop of
  // the test database (FORCE) then ends them with FATAL 57P01, which pg-pool emits on the pool.
  pool.on('error', () => undefined);
  pools.push(pool);
  const scheduler = await createJobScheduler({ pool }, { nodeId, ...options });
  opened.push(scheduler);
  return scheduler;
};

let sequence = 0;
const tick = () => ({ code: 'standalone', runKey: `tick-${++sequence}` });

describe('createJobScheduler', () => {
  it('runs a tick once across independent pools, with the lease API and its guarantees', async () => {
    const nodes = await Promise.all(['a', 'b', 'c'].map((id) => onPool(`plain-${id}`)));
    for (let round = 0; round < 5; round++) {
      const request = tick();
      const ran: string[] = [];
      const outcomes = await Promise.all(
        nodes.map((node, index) =>
          node.jobs.runExclusive(request, async ({ fencingToken, idempotencyKey }) => {
            ran.push(`${index}:${fencingToken}:${idempotencyKey.slice(0, 3)}`);
            return index;
          }),
        ),
      );
      expect(ran).toHaveLength(1);
      expect(outcomes.filter((outcome) => outcome.acquired)).toHaveLength(1);
      const run = await nodes[0].runs.getRun(request);
      expect(run).toMatchObject({ status: JobSchedulerStatus.SUCCESS, attempts: 1 });
    }
  });

  it('works on a TypeORM DataSource too, and keeps a hand-acquired lease alive', async () => {
    const dataSource = await database.dataSource({ poolSize: 2 });
    const scheduler = await createJobScheduler({ dataSource }, { nodeId: 'typeorm-node' });
    opened.push(scheduler);
    const lock = await scheduler.jobs.acquire({ ...tick(), leaseMs: 3_000, heartbeatMs: 500 });
    if (!lock.acquired) throw new Error('expected to acquire');
    const hold = scheduler.jobs.keepAlive(lock);
    await sleep(3_500);
    expect(hold.signal.aborted).toBe(false);
    expect(await hold.complete({ rows: 1 })).toBe(true);
  });

  it('close() aborts running callbacks with JobShutdownError and releases their leases after the grace', async () => {
    const scheduler = await onPool('closing', { shutdownGraceMs: 200 });
    const other = await onPool('taker');
    const request = { ...tick(), leaseMs: 60_000 };
    let reason: unknown;
    const running = scheduler.jobs
      .runExclusive(request, async ({ signal }) => {
        await aborted(signal);
        reason = signal.reason;
        await sleep(1_000); // ignores the grace: its lease is released under it
      })
      .catch((error: unknown) => error);
    await sleep(300);
    await captureNestLogs(async (logs) => {
      await scheduler.close();
      expect(logs.filter((line) => line.level === 'warn').map((line) => line.message)).toEqual([
        'Released 1 job lease(s) still running after the shutdown grace',
      ]);
    });
    expect(reason).toBeInstanceOf(JobShutdownError);
    // Released: another node takes the run at once, long before its 60 s lease would pass.
    expect((await other.jobs.acquire(request)).acquired).toBe(true);
    await running;
    await scheduler.close(); // idempotent
  });

  it('refuses what is neither a DataSource, a repository nor { pool }', async () => {
    await expect(createJobScheduler({ pool: {} } as never)).rejects.toBeInstanceOf(TypeError);
  });
});
