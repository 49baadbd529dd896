// A Nest 12 (ESM-only) consumer of the CommonJS package: Node 20.19+ loads ESM through require().
import 'reflect-metadata';
import { createRequire } from 'node:module';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  currentJobExecution,
  JobScheduler,
  JobSchedulerMigrations,
  JobSchedulerModule,
  JobSchedulerService,
  RunOnce,
  RunOnceModule,
  Scheduled,
  ScheduledJobsService,
  SchedulingModule,
} from '@sdcorejs/nestjs/features';
import { JobSchedulerDashboardModule } from '@sdcorejs/nestjs/features/dashboard';
import { JobSchedulerHealthIndicator } from '@sdcorejs/nestjs/features/health';

class ReportJob {
  async run(execution) {
    ReportJob.ran = execution.name;
  }
}
Scheduled('consumer.report', { every: '1h' })(ReportJob);

// An @nestjs/schedule 12 cron every second, run once across instances by @RunOnce
// (@Cron('* * * * * *') above @RunOnce('consumer.tick'), applied as TypeScript applies them:
// the nearest first, each given what the one before returned, or what it had if that was nothing).
const decorate = (decorators, target, key) => {
  let descriptor = Object.getOwnPropertyDescriptor(target, key);
  for (const decorator of [...decorators].reverse()) descriptor = decorator(target, key, descriptor) || descriptor;
  Object.defineProperty(target, key, descriptor);
};
class TickCron {
  async tick() {
    TickCron.ticks.push(currentJobExecution()?.name);
  }
}
TickCron.ticks = [];
decorate([Cron('* * * * * *'), RunOnce('consumer.tick')], TickCron.prototype, 'tick');

class AppModule {}
Module({
  providers: [ReportJob, TickCron, JobSchedulerHealthIndicator],
  imports: [
    SchedulingModule.forRoot({ start: false, metrics: false }),
    ScheduleModule.forRoot(),
    RunOnceModule.forRoot(),
    TerminusModule,
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      entities: [JobScheduler],
      migrations: [...JobSchedulerMigrations],
      migrationsRun: true,
    }),
    JobSchedulerModule.forRoot({ global: true, nodeId: 'nest12-consumer' }),
    JobSchedulerDashboardModule.forRoot({ path: '/jobs', authorize: () => 'consumer' }),
  ],
})(AppModule);

// An HTTP application (@nestjs/platform-express 12): the dashboard's page and API answer.
const app = await NestFactory.create(AppModule, { logger: ['error'] });
await app.listen(0, '127.0.0.1');
const base = await app.getUrl();
const jobs = app.get(JobSchedulerService);
const exclusive = await jobs.runExclusive({ code: 'consumer', runKey: 'nest12-exclusive' }, async (lease) => lease.idempotencyKey);
const lock = await jobs.acquire({ code: 'consumer', runKey: 'nest12-manual' });
const completed = lock.acquired ? await jobs.complete({ id: lock.id, ownerToken: lock.ownerToken }, { rows: 42 }) : false;
const [scheduled] = await app.get(ScheduledJobsService).runNow('consumer.report');
const health = (await app.get(JobSchedulerHealthIndicator).isHealthy('jobs')).jobs.status;
const page = await fetch(`${base}/jobs`);
const api = await fetch(`${base}/jobs/api/jobs`);
const dashboard = {
  page: page.status,
  html: (page.headers.get('content-type') ?? '').startsWith('text/html'),
  api: api.status,
  jobs: api.ok ? (await api.json()).jobs.map((job) => job.name) : [],
};
for (let waited = 0; TickCron.ticks.length === 0 && waited < 10_000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
const runOnce = { ran: TickCron.ticks.length > 0, named: TickCron.ticks[0] };
const version = (name) => createRequire(import.meta.url)(`${name}/package.json`).version;
await app.close();
process.stdout.write(
  JSON.stringify({
    nest: version('@nestjs/core'),
    terminus: version('@nestjs/terminus'),
    schedule: version('@nestjs/schedule'),
    exclusive,
    completed,
    scheduled: scheduled.outcome,
    ran: ReportJob.ran,
    health,
    runOnce,
    dashboard,
  }),
);
