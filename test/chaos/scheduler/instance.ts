import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DynamicSchedulesModule, JobScheduler, JobSchedulerModule, RunOnceModule, SchedulingModule, TENANT_DIRECTORY } from '../../../src/features';
import { ChaosTenants, DECLARED_JOB_PROVIDERS, DynamicRunHandler } from './scheduler-chaos.jobs';
import { realNow } from '../../support/fleet';
import { SCHEDULER_CHAOS_PROTOCOL } from './scheduler-chaos.protocol';
import { RunRecorder } from './scheduler-chaos.recorder';

/**
 * One instance of the scheduler chaos run: a Nest application, as a user would write it, with
 * SchedulingModule (@Scheduled jobs, global and per-tenant), @nestjs/schedule + RunOnceModule (a
 * @RunOnce @Cron) and DynamicSchedulesModule (a @ScheduleHandler), every module with its default
 * options. Started by the orchestrator (scheduler-chaos.fleet.ts) with SCHED_CHAOS_INSTANCE set.
 * SIGTERM closes the application (app.close(), as enableShutdownHooks would) and exits 0.
 * No handler for uncaught errors: a crash must show as a crash.
 */
const settings = SCHEDULER_CHAOS_PROTOCOL.settings('test/chaos/scheduler/instance.ts is started by the scheduler chaos orchestrator (npm run chaos:scheduler)');
const parent = SCHEDULER_CHAOS_PROTOCOL.parent();
const send = parent.send;

const main = async (): Promise<void> => {
  const recorder = new RunRecorder(settings, send);
  recorder.journal({ type: 'boot', nodeId: settings.nodeId, pid: process.pid, realMs: realNow(), wallMs: Date.now() });

  @Module({
    imports: [
      TypeOrmModule.forRoot({
        type: 'postgres',
        url: settings.databaseUrl,
        entities: [JobScheduler],
        poolSize: 6,
        applicationName: `sched-chaos-${settings.nodeId}`,
        connectTimeoutMS: 5_000,
        // A replacement may boot while its proxy is cut.
        retryAttempts: 120,
        retryDelay: 250,
      }),
      JobSchedulerModule.forRoot({ nodeId: settings.nodeId }),
      SchedulingModule.forRoot(),
      DynamicSchedulesModule.forRoot(),
      ScheduleModule.forRoot(),
      RunOnceModule.forRoot(),
    ],
    providers: [
      { provide: RunRecorder, useValue: recorder },
      { provide: TENANT_DIRECTORY, useClass: ChaosTenants },
      ...DECLARED_JOB_PROVIDERS,
      DynamicRunHandler,
    ],
  })
  class InstanceModule {}

  const app = await NestFactory.createApplicationContext(InstanceModule, {
    logger: ['error', 'warn', 'log'],
    abortOnError: false,
  });

  let closing = false;
  const close = (): void => {
    if (closing) return;
    closing = true;
    recorder.journal({ type: 'closing', realMs: realNow() });
    app
      .close()
      .then(() => recorder.close())
      .then(
        () => {
          recorder.journal({ type: 'closed', realMs: realNow() });
          if (recorder.failures.length > 0) process.stderr.write(`recorder failures: ${recorder.failures.join('; ')}\n`);
          process.exit(0);
        },
        (error: unknown) => {
          process.stderr.write(`instance ${settings.nodeId} could not close: ${String(error)}\n`);
          process.exit(2);
        },
      );
  };
  process.once('SIGTERM', close);
  parent.onMessage((message) => {
    if (message.type === 'stop') close();
  });
  parent.exitWhenOrphaned();

  recorder.journal({ type: 'ready', realMs: realNow() });
  send({ type: 'ready' });
};

main().catch((error: unknown) => {
  process.stderr.write(`instance ${settings.nodeId} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
