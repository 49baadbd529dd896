import { Injectable, Module } from '@nestjs/common';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { JobSchedulerService, JobSchedulerType } from '../../src/features';
import { sleep } from '../support/lease-nodes';
import { type NestNode, startNestNode } from '../support/nest-node';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/** The README's quick start: a @nestjs/schedule cron provider that runs its tick exclusively. */
const runs: { tick: string; key: string }[] = [];

@Injectable()
class SyncOrdersCron {
  constructor(private readonly jobs: JobSchedulerService) {}

  @Cron('* * * * * *')
  async syncOrders(): Promise<void> {
    const tick = new Date(Math.floor(Date.now() / 1000) * 1000);
    const outcome = await this.jobs.runExclusive(
      { code: 'sync-orders', name: 'Sync orders from ERP', type: JobSchedulerType.SCHEDULE, runKey: tick.toISOString(), leaseMs: 60_000 },
      async ({ idempotencyKey }) => {
        runs.push({ tick: tick.toISOString(), key: idempotencyKey });
        await sleep(100);
      },
    );
    if (!outcome.acquired) return; // another node owns or completed this tick
  }
}

@Module({ imports: [ScheduleModule.forRoot()], providers: [SyncOrdersCron] })
class OrdersModule {}

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

it('runs each cron tick on one of three applications', async () => {
  const nodes: NestNode[] = await Promise.all([1, 2, 3].map(() => startNestNode(database.url, { imports: [OrdersModule] })));
  try {
    await sleep(3_200);
  } finally {
    await Promise.all(nodes.map((node) => node.close()));
  }
  const ticks = runs.map((run) => run.tick);
  expect(ticks.length).toBeGreaterThanOrEqual(1);
  expect(new Set(ticks).size).toBe(ticks.length);
  expect(new Set(runs.map((run) => run.key)).size).toBe(runs.length);
  const [{ count }] = await database.sql<{ count: string }>(`SELECT count(*) FROM "job-scheduler" WHERE code = 'sync-orders' AND status = 'SUCCESS'`);
  expect(Number(count)).toBe(runs.length);
});
