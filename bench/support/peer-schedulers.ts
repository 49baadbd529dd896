import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Cron } from 'croner';
import { Logger, run } from 'graphile-worker';
import { Pool } from 'pg';
import PgBoss from 'pg-boss';
import { JobScheduler, JobSchedulerModule, Scheduled, SchedulingModule } from '../../src/features';

/**
 * The four ways of running "this job once per due instant across nodes" that the peers scenario
 * compares, each set up as its documentation recommends, each node on a pool of its own.
 */
export interface PeerNodesOptions {
  url: string;
  /** Independent nodes (each its own pool, scheduler and timers) started in this process. */
  nodes: number;
  /** Job names, e.g. job-0001. */
  jobs: readonly string[];
  /** A five-field UTC cron. */
  cron: string;
  poolSize: number;
  /** Called when a job's handler starts. */
  onRun(job: string): void;
}

export type StopNodes = () => Promise<void>;

export interface PeerScheduler {
  name: string;
  description: string;
  /** Whether a run leaves a durable record (the exactly-once contract across restarts). */
  durable: boolean;
  start(options: PeerNodesOptions): Promise<StopNodes>;
}

/** The five-field UTC cron due at each of `instants` (whole minutes) and at no other time near them. */
export const cronAt = (instants: readonly number[]): string => {
  const fields = (pick: (date: Date) => number) => [...new Set(instants.map((instant) => pick(new Date(instant))))].sort((a, b) => a - b).join(',');
  for (const instant of instants) {
    if (instant % 60_000 !== 0) throw new RangeError(`cronAt: ${new Date(instant).toISOString()} is not a whole minute`);
  }
  return [
    fields((date) => date.getUTCMinutes()),
    fields((date) => date.getUTCHours()),
    fields((date) => date.getUTCDate()),
    fields((date) => date.getUTCMonth() + 1),
    '*',
  ].join(' ');
};

const stopAll =
  (stops: StopNodes[]): StopNodes =>
  async () => {
    await Promise.allSettled(stops.map((stop) => stop()));
  };

/** Nodes of ours started in this process: their DataSource names must differ across cases too. */
let oursNodes = 0;

/** Ours: @Scheduled jobs in a Nest application per node, SchedulingModule and JobSchedulerModule with their defaults. */
export const OURS: PeerScheduler = {
  name: 'ours',
  description:
    '@Scheduled(cron) in a Nest application context per node: TypeORM pool, JobSchedulerModule.forRoot({ nodeId }), SchedulingModule.forRoot() with its defaults',
  durable: true,
  start: async (options) => {
    const providers = options.jobs.map((job) => {
      @Scheduled(`peers.${job}`, { cron: options.cron })
      class PeerJob {
        run(): void {
          options.onRun(job);
        }
      }
      return PeerJob;
    });
    @Module({ providers })
    class PeerJobsModule {}
    const stops: StopNodes[] = [];
    for (let count = 0; count < options.nodes; count++) {
      const index = oursNodes++;
      class PeerRootModule {}
      const app = await NestFactory.createApplicationContext(
        {
          module: PeerRootModule,
          imports: [
            // Named: several applications in one process must not share TypeORM's registry entry.
            TypeOrmModule.forRoot({ name: `ours-${index}`, type: 'postgres', url: options.url, entities: [JobScheduler], poolSize: options.poolSize }),
            JobSchedulerModule.forRoot({ nodeId: `ours-${index}`, dataSource: `ours-${index}` }),
            SchedulingModule.forRoot(),
            PeerJobsModule,
          ],
        },
        { logger: ['error', 'warn'] },
      );
      stops.push(() => app.close());
    }
    return stopAll(stops);
  },
};

/** pg-boss 10: a queue per job (v10 keys a schedule by its queue), schedule() on every node, work() on every node. */
export const PG_BOSS: PeerScheduler = {
  name: 'pg-boss',
  description:
    'pg-boss 10: per node new PgBoss({ max: pool }) and start(); per job createQueue(name), schedule(name, cron, {}, { tz: UTC, singletonKey: name, singletonSeconds: 60 }) and work(name); other options at their defaults (cron checked every 30 s, queues polled every 2 s)',
  durable: true,
  start: async (options) => {
    const stops: StopNodes[] = [];
    for (let index = 0; index < options.nodes; index++) {
      const boss = new PgBoss({ connectionString: options.url, max: options.poolSize });
      boss.on('error', (error: Error) => process.stderr.write(`pg-boss node ${index}: ${error.message}\n`));
      await boss.start();
      for (const job of options.jobs) {
        await boss.createQueue(job);
        await boss.schedule(job, options.cron, {}, { tz: 'UTC', singletonKey: job, singletonSeconds: 60 });
        await boss.work(job, async () => {
          options.onRun(job);
        });
      }
      stops.push(() => boss.stop({ graceful: false, wait: false }));
    }
    return stopAll(stops);
  },
};

/** graphile-worker 0.17: run() per node with the crontab (one line per job, its own id and job_key). */
export const GRAPHILE_WORKER: PeerScheduler = {
  name: 'graphile-worker',
  description:
    'graphile-worker 0.17: per node run({ pgPool, crontab, taskList }), one crontab line per job with ?id=<job>&jobKey=<job>; other options at their defaults (concurrency 1, pollInterval 2 s)',
  durable: true,
  start: async (options) => {
    const logger = new Logger(() => (level, message) => {
      if (level === 'error' || level === 'warning') process.stderr.write(`graphile-worker ${level}: ${message}\n`);
    });
    const crontab = options.jobs.map((job) => `${options.cron} peers_job ?id=${job.replace(/-/g, '_')}&jobKey=${job} ${JSON.stringify({ job })}`).join('\n');
    const stops: StopNodes[] = [];
    for (let index = 0; index < options.nodes; index++) {
      const pool = new Pool({ connectionString: options.url, max: options.poolSize });
      const report = (error: Error) => process.stderr.write(`graphile-worker node ${index} pool: ${error.message}\n`);
      pool.on('error', report);
      pool.on('connect', (client) => client.on('error', report));
      const runner = await run({
        pgPool: pool,
        crontab,
        logger,
        noHandleSignals: true,
        taskList: {
          peers_job: async (payload) => {
            options.onRun((payload as { job: string }).job);
          },
        },
      });
      stops.push(async () => {
        await runner.stop();
        await pool.end();
      });
    }
    return stopAll(stops);
  },
};

const TRY_LOCK = 'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS "locked"';
const UNLOCK = 'SELECT pg_advisory_unlock(hashtextextended($1, 0)) AS "unlocked"';

/** The hand-rolled helper: a cron timer (croner) on every node, pg_try_advisory_lock around the handler. */
export const ADVISORY_LOCK_HELPER: PeerScheduler = {
  name: 'advisory-lock',
  description:
    'hand-rolled: per node and job a croner timer on the cron; when it fires, a session pg_try_advisory_lock(hash(job:minute)) on a pooled connection, the handler, pg_advisory_unlock (no durable record)',
  durable: false,
  start: async (options) => {
    const pools = Array.from({ length: options.nodes }, () => new Pool({ connectionString: options.url, max: options.poolSize }));
    await Promise.all(pools.map(async (pool) => (await pool.connect()).release()));
    const runOnce = async (pool: Pool, job: string, instant: number): Promise<void> => {
      const key = `${job}:${instant}`;
      const client = await pool.connect();
      try {
        if ((await client.query<{ locked: boolean }>(TRY_LOCK, [key])).rows[0]?.locked !== true) return;
        try {
          options.onRun(job);
        } finally {
          await client.query(UNLOCK, [key]);
        }
      } finally {
        client.release();
      }
    };
    const timers = pools.flatMap((pool) =>
      options.jobs.map(
        (job) =>
          new Cron(options.cron, { timezone: 'UTC' }, () => {
            const minute = Math.round(Date.now() / 60_000) * 60_000;
            void runOnce(pool, job, minute).catch((error: Error) => process.stderr.write(`advisory-lock: ${error.message}\n`));
          }),
      ),
    );
    return async () => {
      for (const timer of timers) timer.stop();
      await Promise.allSettled(pools.map((pool) => pool.end()));
    };
  },
};

export const PEER_SCHEDULERS: readonly PeerScheduler[] = [OURS, PG_BOSS, GRAPHILE_WORKER, ADVISORY_LOCK_HELPER];
