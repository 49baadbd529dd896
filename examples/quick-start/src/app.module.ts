import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import { JobScheduler, JobSchedulerMigrations, JobSchedulerModule, SchedulingModule } from '@sdcorejs/nestjs/features';
import { JobSchedulerHealthIndicator } from '@sdcorejs/nestjs/features/health';
import { HealthController } from './health.controller';
import { HeartbeatJob } from './jobs';
import { MetricsController } from './metrics.controller';

@Module({
  imports: [
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      entities: [JobScheduler],
      migrations: [...JobSchedulerMigrations],
      migrationsRun: true, // or run them with your TypeORM CLI (docs/upgrading.md)
      connectTimeoutMS: 5_000, // a handshake that never answers must not hold a pool slot forever
    }),
    JobSchedulerModule.forRoot(), // the lease: one row per run, in the table "job-scheduler"
    SchedulingModule.forRoot(), // the scheduler: finds the @Scheduled jobs and runs them
    TerminusModule,
  ],
  controllers: [HealthController, MetricsController],
  providers: [HeartbeatJob, JobSchedulerHealthIndicator],
})
export class AppModule {}
