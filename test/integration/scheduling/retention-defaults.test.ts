import { Injectable, Logger, type LoggerService, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  type JobExecution,
  JobScheduler,
  JobSchedulerModule,
  JobSchedulerType,
  RETENTION_WARNING_ROWS,
  SCHEDULED_RETENTION_CODE,
  Scheduled,
  ScheduledJobsService,
  SchedulingError,
  SchedulingModule,
  type SchedulingModuleOptions,
} from '../../../src/features';
import { FixedClock, ManualTimers } from '../../../src/features/testing';
import { type NestNode, startNestNode } from '../../support/nest-node';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

/**
 * Bounded by default: SchedulingModule prunes its declared jobs' finished occurrences without any
 * configuration (SUCCESS after 7 days, FAIL after 30), keeps each job's rows for at least two of
 * its intervals, and never touches run-once markers or hand-acquired runs. A lease module without
 * retention over a large table says so once at boot.
 */
@Scheduled('reports.every-minute', { every: '1m' })
class EveryMinute {
  async run(_execution: JobExecution) {}
}

@Scheduled('reports.monthly', { cron: '0 6 1 * *', timeZone: 'Europe/Paris' })
class Monthly {
  async run(_execution: JobExecution) {}
}

let database: TestDatabase;
let node: NestNode | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await node?.close();
  node = undefined;
});
afterAll(() => database.drop());

const start = async (scheduling: Partial<SchedulingModuleOptions> = {}) => {
  const timers = new ManualTimers(new FixedClock(Date.now()));
  node = await startNestNode(database.url, {
    imports: [SchedulingModule.forRoot({ timers, metrics: false, start: true, ...scheduling })],
    providers: [EveryMinute, Monthly],
  });
  return { node, timers, scheduled: node.app.get(ScheduledJobsService) };
};

/** A finished run of `code` aged `days` (by the database clock). */
const finished = async (code: string, runKey: string | undefined, status: 'SUCCESS' | 'FAIL', days: number) => {
  if (!node) throw new Error('start a node first');
  const lock = await node.jobs.acquire(runKey === undefined ? { code, type: JobSchedulerType.INITIAL } : { code, runKey });
  if (!lock.acquired) throw new Error(`expected to acquire ${code} ${runKey}`);
  await (status === 'SUCCESS' ? node.jobs.complete(lock) : node.jobs.fail(lock));
  await database.sql(`UPDATE "job-scheduler" SET "createdAt" = now() - $1 * interval '1 day', "modifiedAt" = now() - $1 * interval '1 day' WHERE id = $2`, [
    days,
    lock.id,
  ]);
};

/**
 * The fixture's rows (each aged at least 6 days), not the started scheduler's own claims: a test
 * that starts within the claim-ahead lead before a minute finds the every-minute job's next
 * occurrence claimed (RUNNING, created now), which no prune may touch.
 */
const keys = async () =>
  (
    await database.sql<{ key: string }>(
      `SELECT code || ' ' || COALESCE("runKey", '-') || ' ' || status AS key FROM "job-scheduler"
       WHERE code <> $1 AND "createdAt" < now() - interval '1 day' ORDER BY 1`,
      [SCHEDULED_RETENTION_CODE],
    )
  ).map((row) => row.key);

describe('retention of declared jobs, on by default', () => {
  it('prunes old occurrences without configuration, keeps what each job still needs, touches nothing else', async () => {
    await database.sql('DELETE FROM "job-scheduler"');
    const { scheduled } = await start();
    await finished('reports.every-minute', '2026-01-01T00:00:00.000Z', 'SUCCESS', 8); // past 7 days: pruned
    await finished('reports.every-minute', '2026-01-02T00:00:00.000Z', 'SUCCESS', 6); // kept
    await finished('reports.every-minute', '2026-01-03T00:00:00.000Z', 'FAIL', 8); // FAIL kept 30 days
    await finished('reports.every-minute', '2026-01-04T00:00:00.000Z', 'FAIL', 31); // pruned
    await finished('reports.monthly', '2026-01-05T00:00:00.000Z', 'SUCCESS', 20); // two months for a monthly job: kept
    await finished('reports.monthly', '2026-01-06T00:00:00.000Z', 'SUCCESS', 70); // pruned
    await finished('seed.once', undefined, 'SUCCESS', 400); // run-once marker: never
    await finished('manual.export', '2026-01-07T00:00:00.000Z', 'SUCCESS', 400); // hand-acquired: not the scheduler's

    expect(await scheduled.pruneOccurrences()).toBe(3);
    expect(await keys()).toEqual([
      'manual.export 2026-01-07T00:00:00.000Z SUCCESS',
      'reports.every-minute 2026-01-02T00:00:00.000Z SUCCESS',
      'reports.every-minute 2026-01-03T00:00:00.000Z FAIL',
      'reports.monthly 2026-01-05T00:00:00.000Z SUCCESS',
      'seed.once - SUCCESS',
    ]);
  });

  it('runs by itself once an hour, once across instances', async () => {
    await database.sql('DELETE FROM "job-scheduler"');
    const { timers } = await start();
    const second = await startNestNode(database.url, {
      imports: [SchedulingModule.forRoot({ timers, metrics: false })],
      providers: [EveryMinute, Monthly],
    });
    try {
      await finished('reports.every-minute', '2026-01-01T00:00:00.000Z', 'SUCCESS', 9);
      await timers.advance(60 * 60_000);
      expect(await keys()).not.toContain('reports.every-minute 2026-01-01T00:00:00.000Z SUCCESS');
      const periods = await database.sql<{ count: number }>(`SELECT count(*)::int AS count FROM "job-scheduler" WHERE code = $1`, [SCHEDULED_RETENTION_CODE]);
      expect(periods[0].count).toBeGreaterThanOrEqual(1); // each period leased once, whichever instance won
    } finally {
      await second.close();
    }
  });

  it('is switched off only explicitly, and refuses a horizon inside the late tolerance', async () => {
    const { scheduled } = await start({ retention: false });
    expect(await scheduled.pruneOccurrences()).toBeNull();
    await node?.close();
    node = undefined;
    await expect(start({ retention: { success: '30s' } })).rejects.toBeInstanceOf(SchedulingError);
    await expect(start({ retention: { fail: 'soon' } })).rejects.toThrow(/retention\.fail must be a positive duration/);
  });
});

describe('a lease table without retention', () => {
  it(`warns once at boot when it holds more than ${RETENTION_WARNING_ROWS} rows`, async () => {
    const bulk = await createTestDatabase();
    const lines: string[] = [];
    const capture: LoggerService = {
      log: () => undefined,
      error: (message: unknown) => void lines.push(`error ${String(message)}`),
      warn: (message: unknown) => void lines.push(`warn ${String(message)}`),
    };
    @Injectable()
    class Nothing {}
    @Module({
      imports: [TypeOrmModule.forRoot({ type: 'postgres', url: bulk.url, entities: [JobScheduler], poolSize: 2 }), JobSchedulerModule.forRoot({})],
      providers: [Nothing],
    })
    class ManualApp {}
    try {
      const boot = async () => {
        const app = await NestFactory.createApplicationContext(ManualApp, { logger: capture, abortOnError: false });
        await app.close();
        Logger.overrideLogger(false);
      };
      await boot();
      expect(lines.filter((line) => line.includes('no retention'))).toEqual([]); // a small table: nothing to say
      await bulk.sql(
        `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", "runKey")
         SELECT 'bulk-' || g, 'bulk.rows', 'SCHEDULE', 'SUCCESS', gen_random_uuid(), 'r' || g FROM generate_series(1, $1::int) AS g`,
        [RETENTION_WARNING_ROWS + 100_000],
      );
      await bulk.sql('ANALYZE "job-scheduler"');
      await boot();
      const warnings = lines.filter((line) => line.includes('no retention'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/^warn The job-scheduler table holds about \d+ rows and JobSchedulerModule has no retention/);
    } finally {
      await bulk.drop();
    }
  }, 120_000);
});
