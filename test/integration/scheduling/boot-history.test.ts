import { Module, type Type } from '@nestjs/common';
import { JobSchedulerStatus, JobSchedulerType, Scheduled, ScheduledJobsService, SchedulingModule } from '../../../src/features';
import { buildLockKey } from '../../../src/features/job-scheduler/job-identity';
import { dynamicScheduleHistory } from '../../../src/features/scheduling/dynamic/dynamic-schedule-history';
import { scheduleRunKeyPrefix } from '../../../src/features/scheduling/occurrence/occurrence-keys';
import { FixedClock, ManualTimers } from '../../../src/features/testing';
import { type NestNode, startNestNode } from '../../support/nest-node';
import { StatementCounter } from '../../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

const JOBS = 400;
const NOW = new Date('2026-12-01T10:30:00.000Z');
/** The latest occurrence the history holds for the even jobs: 3 hourly occurrences ago. */
const RECORDED = '2026-12-01T07:00:00.000Z';

let database: TestDatabase;
let node: NestNode | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await node?.close();
  await database.drop();
});

const jobName = (index: number): string => `boot.job-${String(index).padStart(3, '0')}`;

/** JOBS hourly jobs, declared as a real application declares them. */
const declaredJobs = (): Type[] =>
  Array.from({ length: JOBS }, (_, index) => {
    @Scheduled(jobName(index), { every: '1h' })
    class HourlyJob {
      run(): void {}
    }
    return HourlyJob;
  });

/** The history statement (one probe per job, whatever their number). */
const isHistoryRead = (statement: string): boolean => statement.includes('unnest($1::text[]) AS wanted("code")');

describe('a scheduler with many declared jobs', () => {
  it('reads the history of every job in one statement at boot, and health in one more', async () => {
    const even = Array.from({ length: JOBS / 2 }, (_, half) => jobName(half * 2));
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, name, type, "runKey", status, "ownerToken", "ownerId", "leaseMs")
       SELECT lock_key, code, code, 'SCHEDULE', $3, 'SUCCESS', gen_random_uuid(), 'seed', 60000
       FROM unnest($1::text[], $2::text[]) AS seeded(code, lock_key)`,
      [even, even.map((code) => buildLockKey(JobSchedulerType.SCHEDULE, code, RECORDED)), RECORDED],
    );
    const counter = new StatementCounter();
    const timers = new ManualTimers(new FixedClock(NOW));
    @Module({ providers: declaredJobs() })
    class JobsModule {}
    node = await startNestNode(database.url, {
      typeorm: { logging: ['query'], logger: counter },
      imports: [SchedulingModule.forRoot({ metrics: false, timers, retention: false }), JobsModule],
    });
    const scheduler = node.app.get(ScheduledJobsService);
    await timers.advance(0);
    await scheduler.idle();

    expect(scheduler.jobNames).toHaveLength(JOBS);
    expect(counter.statements.filter(isHistoryRead)).toHaveLength(1);

    // What the one read found is what each job acts on: the even jobs missed 08:00, 09:00 and
    // 10:00 (30 minutes late: dropped, recorded once); the odd ones have no history to judge by.
    const markers = await database.sql<{ code: string; status: JobSchedulerStatus; data: { outcome: string; missed: number } }>(
      `SELECT code, status, data FROM "job-scheduler" WHERE "runKey" = '2026-12-01T10:00:00.000Z' ORDER BY code`,
    );
    expect(markers.map((row) => row.code)).toEqual(even);
    expect(new Set(markers.map((row) => `${row.status} ${row.data.outcome} ${row.data.missed}`))).toEqual(new Set(['FAIL missed 3']));

    counter.reset();
    const health = await scheduler.jobHealth();
    expect(counter.statements.filter(isHistoryRead)).toHaveLength(1);
    expect(counter.count).toBe(1);
    expect(health).toHaveLength(JOBS);
    expect(health.find((job) => job.name === jobName(0))?.lastSuccessAt?.toISOString()).toBe(RECORDED);
    expect(health.find((job) => job.name === jobName(1))?.lastSuccessAt).toBeNull();
  });

  it('reads the history as of its boot: an occurrence still to come, claimed ahead elsewhere before the read, hides none that passed', async () => {
    await node?.close();
    node = undefined;
    // What the fleet left: 07:00 ran; another instance, up again first, claimed 11:00 ahead (RUNNING).
    const names = ['boot.ahead-a', 'boot.ahead-b'];
    const seed = (runKey: string, status: 'SUCCESS' | 'RUNNING') =>
      database.sql(
        `INSERT INTO "job-scheduler" ("lockKey", code, name, type, "runKey", status, "ownerToken", "ownerId", "leaseMs")
         SELECT lock_key, code, code, 'SCHEDULE', $3, $4, gen_random_uuid(), 'seed', 3600000
         FROM unnest($1::text[], $2::text[]) AS seeded(code, lock_key)`,
        [names, names.map((code) => buildLockKey(JobSchedulerType.SCHEDULE, code, runKey)), runKey, status],
      );
    await seed(RECORDED, 'SUCCESS');
    await seed('2026-12-01T11:00:00.000Z', 'RUNNING');
    const timers = new ManualTimers(new FixedClock(NOW));
    const jobs = names.map((name) => {
      @Scheduled(name, { every: '1h' })
      class HourlyJob {
        run(): void {}
      }
      return HourlyJob;
    });
    @Module({ providers: jobs })
    class JobsModule {}
    node = await startNestNode(database.url, {
      imports: [SchedulingModule.forRoot({ metrics: false, timers, retention: false }), JobsModule],
    });
    await timers.advance(0);
    await node.app.get(ScheduledJobsService).idle();
    // 08:00 and 09:00 missed, 10:00 (30 minutes late) dropped: recorded once, not lost behind 11:00.
    const markers = await database.sql<{ code: string; status: JobSchedulerStatus; data: { outcome: string; missed: number } }>(
      `SELECT code, status, data FROM "job-scheduler" WHERE "runKey" = '2026-12-01T10:00:00.000Z' AND code = ANY($1) ORDER BY code`,
      [names],
    );
    expect(markers.map((row) => `${row.code} ${row.status} ${row.data.outcome} ${row.data.missed}`)).toEqual(names.map((name) => `${name} FAIL missed 3`));

    // A dynamic schedule's history is bounded the same way, within its own key range.
    const prefix = scheduleRunKeyPrefix('nightly/a');
    for (const [at, status] of [
      ['2026-12-01T09:00:00.000Z', 'SUCCESS'],
      ['2026-12-01T10:30:00.000Z', 'SUCCESS'],
      ['2026-12-01T11:00:00.000Z', 'RUNNING'],
    ] as const) {
      await database.sql(
        `INSERT INTO "job-scheduler" ("lockKey", code, name, type, "runKey", status, "ownerToken", "ownerId", "leaseMs")
         VALUES ($1, 'reports.dynamic', 'reports.dynamic', 'SCHEDULE', $2, $3, gen_random_uuid(), 'seed', 3600000)`,
        [buildLockKey(JobSchedulerType.SCHEDULE, 'reports.dynamic', `${prefix}${at}`), `${prefix}${at}`, status],
      );
    }
    const history = dynamicScheduleHistory(node.jobs, () => 'reports.dynamic');
    const at = (iso: string) => new Date(iso).getTime();
    expect(await history.latestOccurrence('nightly/a', at('2026-12-01T10:30:00.000Z'))).toBe(at('2026-12-01T10:30:00.000Z'));
    expect(await history.latestOccurrence('nightly/a', at('2026-12-01T10:29:59.999Z'))).toBe(at('2026-12-01T09:00:00.000Z'));
    expect(await history.latestOccurrence('nightly/a')).toBe(at('2026-12-01T11:00:00.000Z'));
    expect(await history.latestOccurrence('nightly/b', at('2026-12-01T10:30:00.000Z'))).toBeNull();
  });
});
