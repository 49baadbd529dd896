import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { InjectDataSource, TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { type JobExecution, JobScheduler, JobSchedulerModule, Scheduled, ScheduledJobsService, SchedulingModule } from '../../src/features';
import type { DemoMessage } from './demo-messages';

const node = process.env.DEMO_NODE ?? 'node';
const send = (message: DemoMessage) => process.send?.(message);
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    });
  });

/** The side effect, done the way the README says: keyed by the idempotency key, inserted once. */
const recordSideEffect = (dataSource: DataSource, idempotencyKey: string, tick: string) =>
  dataSource.query(`INSERT INTO demo_side_effect ("idempotencyKey", tick, node) VALUES ($1, $2, $3) ON CONFLICT ("idempotencyKey") DO NOTHING`, [
    idempotencyKey,
    tick,
    node,
  ]);

/**
 * Every 2 s one node (whichever takes the lease first, after up to 300 ms of jitter) syncs that
 * tick. A tick whose holder died (RUNNING past its 3 s lease) is taken over by another node within
 * a scan period (1 s here): the same idempotency key, a greater fencing token, trigger 'take-over'.
 */
@Scheduled('demo.sync-orders', { every: '2s', leaseMs: 3_000, jitterMs: 300 })
class SyncOrdersJob {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async run({ scheduledAt, idempotencyKey, signal, trigger, fencingToken }: JobExecution): Promise<void> {
    const tick = scheduledAt.toISOString();
    if (trigger === 'take-over') {
      await recordSideEffect(this.dataSource, idempotencyKey, tick);
      send({ type: 'reclaimed', node, tick, fencingToken });
      return;
    }
    send({ type: 'started', node, tick });
    await sleep(400 + Math.floor(Math.random() * 500), signal);
    await recordSideEffect(this.dataSource, idempotencyKey, tick);
  }
}

@Injectable()
class OutcomeReporter {
  constructor(scheduler: ScheduledJobsService) {
    scheduler.onRun((run) => {
      if (run.name === 'demo.sync-orders' && run.trigger !== 'take-over') {
        send({ type: 'outcome', node, tick: run.scheduledAt.toISOString(), outcome: run.outcome });
      }
    });
  }
}

@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DEMO_DATABASE_URL, entities: [JobScheduler], poolSize: 3 }),
    JobSchedulerModule.forRoot({ nodeId: node, shutdownGraceMs: 1_000 }),
    SchedulingModule.forRoot({ shutdownGraceMs: 1_000, takeOverScanMs: 1_000 }),
  ],
  providers: [SyncOrdersJob, OutcomeReporter],
})
class DemoNodeModule {}

const main = async () => {
  const app = await NestFactory.createApplicationContext(DemoNodeModule, { logger: ['error'] });
  process.on('SIGTERM', () => {
    void app.close().then(() => process.exit(0));
  });
  send({ type: 'ready', node });
};

void main();
