import { Injectable, Module } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import {
  InvalidJobLeaseOptionsError,
  InvalidJobSchedulerModuleOptionsError,
  JobSchedulerModule,
  JobSchedulerService,
  JobShutdownError,
} from '../../src/features';
import { type NestNode, startNestNode } from '../support/nest-node';
import { sleep } from '../support/lease-nodes';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  await database.drop();
});

let sequence = 0;
const options = (extra: Record<string, unknown> = {}) => ({ code: 'module-job', runKey: `tick-${++sequence}`, ...extra });

const ownerOf = async (idempotencyKey: string) => {
  const [row] = await database.sql<{ ownerId: string; status: string; data: unknown }>(
    'SELECT "ownerId", status, data FROM "job-scheduler" WHERE "lockKey" = $1',
    [idempotencyKey],
  );
  return row;
};

/** A cron-style provider in a feature module that injects the (global) service. */
@Injectable()
class OrdersSync {
  constructor(readonly jobs: JobSchedulerService) {}
}

@Module({ providers: [OrdersSync], exports: [OrdersSync] })
class OrdersModule {}

describe('JobSchedulerModule', () => {
  const started: NestNode[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((node) => node.close()));
  });
  const start = async (...args: Parameters<typeof startNestNode>) => {
    const node = await startNestNode(...args);
    started.push(node);
    return node;
  };

  it('forRoot registers a global service on the default DataSource', async () => {
    const node = await start(database.url, { jobScheduler: { nodeId: 'api-1' }, imports: [OrdersModule] });
    const { jobs } = node.app.get(OrdersSync);
    expect(jobs).toBe(node.jobs);
    const outcome = await jobs.runExclusive(options(), async ({ idempotencyKey }) => idempotencyKey);
    expect(await ownerOf(outcome.result as string)).toMatchObject({ ownerId: 'api-1', status: 'SUCCESS' });
    expect(JobSchedulerModule.forRoot({}).global).toBe(true);
    expect(JobSchedulerModule.forRoot({ global: false }).global).toBe(false);
  });

  it('forRootAsync takes its options from a factory', async () => {
    const node = await start(database.url, { async: true, jobScheduler: { nodeId: 'worker-async' } });
    const outcome = await node.jobs.runExclusive(options(), async ({ idempotencyKey }) => idempotencyKey);
    expect(await ownerOf(outcome.result as string)).toMatchObject({ ownerId: 'worker-async' });
  });

  it('runs on a named DataSource', async () => {
    const node = await start(database.url, { jobScheduler: { dataSource: 'jobs', nodeId: 'named' } });
    // The only DataSource in this application is the named one.
    expect(() => node.app.get(getDataSourceToken())).toThrow();
    expect(node.dataSource).toBe(node.app.get(getDataSourceToken('jobs')));
    const outcome = await node.jobs.runExclusive(options(), async ({ idempotencyKey }) => idempotencyKey);
    expect(await ownerOf(outcome.result as string)).toMatchObject({ ownerId: 'named', status: 'SUCCESS' });
  });

  it('two applications share one run per key', async () => {
    const [a, b] = await Promise.all([start(database.url), start(database.url)]);
    const request = options();
    const ran = jest.fn(async () => 'ok');
    const outcomes = await Promise.all([a.jobs.runExclusive(request, ran), b.jobs.runExclusive(request, ran)]);
    expect(ran).toHaveBeenCalledTimes(1);
    expect(outcomes.filter((outcome) => outcome.acquired)).toHaveLength(1);
  });

  it('applies module lease defaults', async () => {
    const node = await start(database.url, { jobScheduler: { defaults: { leaseMs: 30_000 } } });
    const lock = await node.jobs.acquire(options());
    expect(lock).toMatchObject({ acquired: true, leaseMs: 30_000, heartbeatMs: 10_000 });
  });

  it('refuses unusable module options at boot', async () => {
    await expect(startNestNode(database.url, { jobScheduler: { defaults: { leaseMs: 1 } } })).rejects.toBeInstanceOf(InvalidJobLeaseOptionsError);
    await expect(startNestNode(database.url, { jobScheduler: { shutdownGraceMs: -1 } })).rejects.toBeInstanceOf(InvalidJobSchedulerModuleOptionsError);
    await expect(startNestNode(database.url, { jobScheduler: { nodeId: ' ' } })).rejects.toBeInstanceOf(InvalidJobSchedulerModuleOptionsError);
  });

  it('on shutdown aborts running callbacks, waits the grace, then releases what is still held', async () => {
    const node = await startNestNode(database.url, { jobScheduler: { shutdownGraceMs: 200, nodeId: 'leaving' } });
    const other = await start(database.url);
    const request = options();
    let stubbornReason: unknown;
    let politeKey = '';
    let stubbornKey = '';
    let entered = 0;
    const polite = node.jobs.runExclusive(options(), async ({ signal, idempotencyKey }) => {
      politeKey = idempotencyKey;
      entered++;
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    });
    const stubborn = node.jobs.runExclusive(request, async ({ signal, idempotencyKey }) => {
      stubbornKey = idempotencyKey;
      entered++;
      signal.addEventListener('abort', () => (stubbornReason = signal.reason), { once: true });
      await sleep(1_500); // ignores its signal
      return 'late';
    });
    const politeOutcome = polite.catch((error: unknown) => error);
    const stubbornOutcome = stubborn.catch((error: unknown) => error);
    while (entered < 2) await sleep(10);
    const closing = Date.now();
    await node.close();
    expect(Date.now() - closing).toBeLessThan(1_400);
    expect(stubbornReason).toBeInstanceOf(JobShutdownError);
    expect(await politeOutcome).toBeInstanceOf(JobShutdownError);
    expect(await ownerOf(politeKey)).toMatchObject({ status: 'FAIL', data: { error: { name: 'JobShutdownError' } } });
    expect(await ownerOf(stubbornKey)).toMatchObject({ status: 'FAIL', data: { released: true, reason: 'shutdown' } });
    // Released, so another node takes the run at once.
    expect((await other.jobs.acquire(request)).acquired).toBe(true);
    await stubbornOutcome;
  });
});
