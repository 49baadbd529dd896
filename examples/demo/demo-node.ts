import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { InjectDataSource, TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import {
  type JobExecution,
  JobScheduler,
  JobSchedulerModule,
  JobSchedulerService,
  Scheduled,
  ScheduledJobsService,
  SchedulingModule,
} from '../../src/features';
import type { DemoMessage } from './demo-messages';

const node = process.env.DEMO_NODE ?? 'node';
const send = (message: DemoMessage) => process.send?.(message);
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

/** The side effect, done the way the README says: keyed by the idempotency key, inserted once. */
const recordSideEffect = (dataSource: DataSource, idempotencyKey: string, tick: string) =>
  dataSource.query(
    `INSERT INTO demo_side_effect ("idempotencyKey", tick, node) VALUES ($1, $2, $3) ON CONFLICT ("idempotencyKey") DO NOTHING`,
    [idempotencyKey, tick, node],
  );

/** Every 2 s one node (whichever takes the lease first, after up to 300 ms of jitter) syncs that tick. */
@Scheduled('demo.sync-orders', { every: '2s', leaseMs: 3_000, jitterMs: 300 })
class SyncOrdersJob {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async run({ scheduledAt, idempotencyKey, signal }: JobExecution): Promise<void> {
    const tick = scheduledAt.toISOString();
    send({ type: 'started', node, tick });
    await sleep(400 + Math.floor(Math.random() * 500), signal);
    await recordSideEffect(this.dataSource, idempotencyKey, tick);
  }
}

/**
 * Every 2 s one node looks for ticks whose holder died (RUNNING past its own lease) and finishes
 * them with runExclusive, which reclaims the row: new owner token, a greater fencing token, same key.
 */
@Scheduled('demo.recover-stale', { every: '2s' })
class RecoverStaleJob {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly jobs: JobSchedulerService,
  ) {}

  async run(): Promise<void> {
    const stale: { runKey: string }[] = await this.dataSource.query(
      `SELECT "runKey" FROM "job-scheduler"
       WHERE code = 'demo.sync-orders' AND status = 'RUNNING'
         AND "modifiedAt" < CURRENT_TIMESTAMP - "leaseMs" * interval '1 millisecond'`,
    );
    for (const { runKey } of stale) {
      await this.jobs.runExclusive({ code: 'demo.sync-orders', runKey, leaseMs: 3_000 }, async ({ idempotencyKey, fencingToken }) => {
        await recordSideEffect(this.dataSource, idempotencyKey, runKey);
        send({ type: 'reclaimed', node, tick: runKey, fencingToken });
      });
    }
  }
}

@Injectable()
class OutcomeReporter {
  constructor(scheduler: ScheduledJobsService) {
    scheduler.onRun((run) => {
      if (run.name === 'demo.sync-orders') {
        send({ type: 'outcome', node, tick: run.scheduledAt.toISOString(), outcome: run.outcome });
      }
    });
  }
}

@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DEMO_DATABASE_URL, entities: [JobScheduler], poolSize: 3 }),
    JobSchedulerModule.forRoot({ nodeId: node, shutdownGraceMs: 1_000 }),
    SchedulingModule.forRoot({ shutdownGraceMs: 1_000 }),
  ],
  providers: [SyncOrdersJob, RecoverStaleJob, OutcomeReporter],
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
