import { Controller, Get, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { type JobExecution, Scheduled, SchedulingModule } from '../../src/features';
import { JobSchedulerHealthIndicator } from '../../src/features/health';
import { FixedClock, ManualTimers } from '../../src/features/testing';
import { type NestNode, startNestNode } from '../support/nest-node';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

let failing = false;

@Scheduled('reports.health-probe', { every: '1m' })
class ProbeJob {
  async run(_execution: JobExecution) {
    if (failing) throw new Error('broken');
  }
}

@Controller()
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly jobs: JobSchedulerHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.jobs.isHealthy('jobs', { maxExpiredLeases: 0 })]);
  }
}

let database: TestDatabase;
let node: NestNode;
const timers = new ManualTimers(new FixedClock(Date.UTC(2026, 0, 1)));

beforeAll(async () => {
  database = await createTestDatabase();
  @Module({ imports: [TerminusModule], controllers: [HealthController], providers: [JobSchedulerHealthIndicator, ProbeJob] })
  class HealthModule {}
  node = await startNestNode(database.url, { imports: [SchedulingModule.forRoot({ timers, metrics: false }), HealthModule] });
});
afterAll(async () => {
  await node.close();
  await database.drop();
});

const check = () => node.app.get(JobSchedulerHealthIndicator).isHealthy('jobs', { maxExpiredLeases: 0 });

it('is up while jobs succeed, and down after two intervals without success or with expired leases', async () => {
  await timers.advance(60_000);
  // A single server streams to no standby: nothing a failover could lose.
  expect(await check()).toMatchObject({ jobs: { status: 'up', database: 'up', expiredLeases: 0, replication: { safe: true, standbys: 0, risk: null } } });
  failing = true;
  await timers.advance(60_000);
  expect((await check()).jobs.status).toBe('up'); // one missed interval is not yet an alert
  await timers.advance(60_000);
  const down = await check();
  expect(down.jobs).toMatchObject({ status: 'down', staleJobs: ['reports.health-probe'] });
  failing = false;
  await timers.advance(60_000);
  expect((await check()).jobs.status).toBe('up');

  const stuck = await node.jobs.acquire({ code: 'stuck', runKey: 'r', leaseMs: 1_000 });
  if (!stuck.acquired) throw new Error('expected to acquire');
  await database.sql(`UPDATE "job-scheduler" SET "modifiedAt" = now() - interval '1 minute' WHERE id = $1`, [stuck.id]);
  expect(await check()).toMatchObject({ jobs: { status: 'down', expiredLeases: 1 } });
});
