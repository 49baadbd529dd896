// A Nest 11 CommonJS consumer: one runExclusive and one manual acquire/complete.
require('reflect-metadata');
const { Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { TypeOrmModule } = require('@nestjs/typeorm');
const {
  JobScheduler,
  JobSchedulerMigrations,
  JobSchedulerModule,
  JobSchedulerService,
  Scheduled,
  ScheduledJobsService,
  SchedulingModule,
} = require('@sdcorejs/nestjs/features');

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
    JobSchedulerModule.forRoot({ global: true, nodeId: 'nest11-consumer' }),
  ],
})(AppModule);

(async () => {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
  const jobs = app.get(JobSchedulerService);
  const exclusive = await jobs.runExclusive({ code: 'consumer', runKey: 'nest11-exclusive' }, async (lease) => lease.idempotencyKey);
  const lock = await jobs.acquire({ code: 'consumer', runKey: 'nest11-manual' });
  const completed = lock.acquired ? await jobs.complete({ id: lock.id, ownerToken: lock.ownerToken }, { rows: 42 }) : false;
  const [scheduled] = await app.get(ScheduledJobsService).runNow('consumer.report');
  const nest = require('@nestjs/core/package.json').version;
  await app.close();
  // The dashboard's subpath loads, and its page, script and stylesheet ship next to it.
  const { JobSchedulerDashboardModule } = require('@sdcorejs/nestjs/features/dashboard');
  const dashboard = JobSchedulerDashboardModule.forRoot({ authorize: () => 'consumer' }).controllers.length;
  const ui = require('node:path').join(require('node:path').dirname(require.resolve('@sdcorejs/nestjs/features/dashboard')), 'dashboard', 'ui');
  const assets = require('node:fs').readdirSync(ui).sort();
  process.stdout.write(JSON.stringify({ nest, exclusive, completed, scheduled: scheduled.outcome, ran: ReportJob.ran, dashboard, assets }));
})().catch((error) => {
  process.stderr.write(String(error && error.stack));
  process.exit(1);
});
