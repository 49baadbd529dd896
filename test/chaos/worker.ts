import 'reflect-metadata';
import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { JobScheduler, JobSchedulerModule, JobSchedulerService } from '../../src/features';
import { skewProcessClock } from './chaos.clock-skew';
import { ChaosEventLog } from './chaos.event-log';
import { CHAOS_PROTOCOL } from './chaos.protocol';
import { ChaosWorkerNode } from './chaos.worker-node';

/**
 * One chaos worker process: its own Nest application context, TypeORM pool and lease module.
 * Spawned by the orchestrator (chaos.fleet.ts) with CHAOS_WORKER set; talks to it over IPC.
 * It installs no handler for uncaught errors on purpose: a crash must show as a crash.
 */
const settings = CHAOS_PROTOCOL.settings('test/chaos/worker.ts is started by the chaos orchestrator (npm run chaos)');
// First of all, before anything reads the clock.
skewProcessClock(settings.clockSkewMs);

const parent = CHAOS_PROTOCOL.parent();
const send = parent.send;

const main = async (): Promise<void> => {
  const events = new ChaosEventLog(settings.eventsFile);
  events.write({ type: 'boot', nodeId: settings.nodeId, clockMs: Date.now(), realMs: Math.round(performance.timeOrigin + performance.now()) });

  class ChaosWorkerModule {}
  const root: DynamicModule = {
    module: ChaosWorkerModule,
    imports: [
      TypeOrmModule.forRoot({
        type: 'postgres',
        url: settings.databaseUrl,
        entities: [JobScheduler],
        poolSize: 4,
        applicationName: `chaos-worker-${settings.nodeId}`,
        connectTimeoutMS: 5_000,
        // A replacement may boot while the server restarts.
        retryAttempts: 120,
        retryDelay: 250,
      }),
      JobSchedulerModule.forRoot({ nodeId: settings.nodeId, shutdownGraceMs: 2_000 }),
    ],
  };
  const app = await NestFactory.createApplicationContext(root, { logger: ['error', 'warn'], abortOnError: false });
  const node = new ChaosWorkerNode(settings, app.get(JobSchedulerService), app.get<DataSource>(getDataSourceToken()), events, send);

  parent.onMessage((message) => {
    if (message.type === 'tick') node.onTick(message.index);
    if (message.type === 'stop') {
      node
        .stop()
        .then(() => app.close())
        .then(
          () => process.exit(0),
          (error: unknown) => {
            process.stderr.write(`chaos worker ${settings.nodeId} could not shut down: ${String(error)}\n`);
            process.exit(2);
          },
        );
    }
  });
  parent.exitWhenOrphaned();

  node.start();
  send({ type: 'ready', clockMs: Date.now() });
};

main().catch((error: unknown) => {
  process.stderr.write(`chaos worker ${settings.nodeId} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
