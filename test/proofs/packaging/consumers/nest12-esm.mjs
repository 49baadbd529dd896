// A Nest 12 (ESM-only) consumer of the CommonJS package: Node 20.19+ loads ESM through require().
import 'reflect-metadata';
import { createRequire } from 'node:module';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  JobScheduler,
  JobSchedulerMigrations,
  JobSchedulerModule,
  JobSchedulerService,
  Scheduled,
  ScheduledJobsService,
  SchedulingModule,
} from '@sdcorejs/nestjs/features';

class ReportJob {
  async run(execution) {
    ReportJob.ran = execution.name;
  }
}
Scheduled('consumer.report', { every: '1h' })(ReportJob);

class AppModule {}
Module({
  providers: [ReportJob],
  imports: [
    SchedulingModule.forRoot({ start: false, metrics: false }),
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      entities: [JobScheduler],
      migrations: [...JobSchedulerMigrations],
      migrationsRun: true,
    }),
    JobSchedulerModule.forRoot({ global: true, nodeId: 'nest12-consumer' }),
  ],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
const jobs = app.get(JobSchedulerService);
const exclusive = await jobs.runExclusive({ code: 'consumer', runKey: 'nest12-exclusive' }, async (lease) => lease.idempotencyKey);
const lock = await jobs.acquire({ code: 'consumer', runKey: 'nest12-manual' });
const completed = lock.acquired ? await jobs.complete({ id: lock.id, ownerToken: lock.ownerToken }, { rows: 42 }) : false;
const [scheduled] = await app.get(ScheduledJobsService).runNow('consumer.report');
const nest = createRequire(import.meta.url)('@nestjs/core/package.json').version;
await app.close();
process.stdout.write(JSON.stringify({ nest, exclusive, completed, scheduled: scheduled.outcome, ran: ReportJob.ran }));
