import { join } from 'node:path';
import { Module, type Type } from '@nestjs/common';
import {
  type JobExecution,
  JobSchedulerService,
  type JobRunRecord,
  Scheduled,
  ScheduledJobsService,
  SchedulingModule,
  type SchedulingModuleOptions,
} from '../../src/features';
import { createJobSchedulerStatements } from '../../src/features/job-scheduler/job-scheduler.statements';
import { FixedClock, ManualTimers } from '../../src/features/testing';
import { ProcessGroup, waitUntil } from '../support/fleet';
import { sleep } from '../support/lease-nodes';
import { StatementCounter } from '../support/statement-counter';
import { type NestNode, startNestNode } from '../support/nest-node';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * Take-over of abandoned occurrences with real processes: an instance SIGKILLed during a run
 * (its heartbeats stop) has that occurrence finished by another instance, with the same
 * idempotency key and a greater fencing token; a job that kills every process that runs it has
 * three owners, then is recorded abandoned; `abandoned: 'drop'` ends such an occurrence unrun.
 * And a run waiting its jitter when the app closes never starts: the process exits at once.
 */
const ROOT = join(__dirname, '..', '..');
const FIXTURE = join(__dirname, '..', 'integration', 'fixtures', 'scheduled-node.child.ts');
const YEARLY = 'fleet.yearly-report';
const OCCURRENCE = `${new Date().getUTCFullYear()}-01-01T00:00:00.000Z`;
const PREVIOUS = `${new Date().getUTCFullYear() - 1}-01-01T00:00:00.000Z`;

let database: TestDatabase;
const children: ProcessGroup[] = [];
const nodes: NestNode[] = [];

const startChild = (name: string, mode: string): ProcessGroup => {
  const child = ProcessGroup.node(name, FIXTURE, {
    cwd: ROOT,
    env: { ...process.env, SCHEDULED_DATABASE_URL: database.url, SCHEDULED_NODE: name, SCHEDULED_MODE: mode, NO_COLOR: '1' },
  });
  children.push(child);
  return child;
};

const event = (child: ProcessGroup, name: string) => child.lines.find((line) => line.event === name);

const waitFor = (what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> =>
  waitUntil(condition, {
    what,
    timeoutMs,
    intervalMs: 100,
    details: () => children.map((child) => `--- ${child.name}\n${child.output}`).join('\n'),
  });

interface FleetRun {
  node: string;
  trigger: string;
  idempotency_key: string;
  fencing_token: string;
}
const fleetRuns = (name: string) =>
  database.sql<FleetRun>('SELECT node, trigger, idempotency_key, fencing_token FROM fleet_runs WHERE name = $1 ORDER BY recorded_at', [name]);
const leaseRow = async (code: string, runKey: string) =>
  (
    await database.sql<{
      status: string;
      attempts: number;
      fencingToken: string;
      lockKey: string;
      data: Record<string, unknown> | null;
      lastError: Record<string, unknown> | null;
    }>(
      `SELECT status::text AS status, attempts, "fencingToken"::text AS "fencingToken", "lockKey", data, "lastError" FROM "job-scheduler" WHERE code = $1 AND "runKey" = $2`,
      [code, runKey],
    )
  )[0];

/** The previous year's occurrence recorded, so that the first instance catches up this year's at boot. */
const recordPreviousOccurrence = async (): Promise<void> => {
  const jobs = new JobSchedulerService(await database.dataSource({ poolSize: 1 }));
  const lock = await jobs.acquire({ code: YEARLY, runKey: PREVIOUS });
  if (!lock.acquired) throw new Error('the previous occurrence is already recorded');
  await jobs.complete(lock);
};

/** An in-process instance with the same job name, whose run only records what it saw. */
const observer = async (
  job: Type | Type[],
  scheduling: SchedulingModuleOptions = {},
  typeorm: Record<string, unknown> = {},
): Promise<NestNode & { scheduler: ScheduledJobsService }> => {
  @Module({ providers: Array.isArray(job) ? job : [job] })
  class JobsModule {}
  const node = await startNestNode(database.url, {
    typeorm,
    jobScheduler: { nodeId: 'observer' },
    imports: [SchedulingModule.forRoot({ metrics: false, retention: false, takeOverScanMs: 300, ...scheduling }), JobsModule],
  });
  nodes.push(node);
  return Object.assign(node, { scheduler: node.app.get(ScheduledJobsService) });
};

const observed: JobExecution[] = [];

@Scheduled(YEARLY, { cron: '0 0 1 1 *', missed: 'run-once', leaseMs: 2_000 })
class ObservedYearlyJob {
  run(execution: JobExecution) {
    observed.push(execution);
  }
}

@Scheduled(YEARLY, { cron: '0 0 1 1 *', leaseMs: 2_000 })
class LateYearlyJob {
  run(execution: JobExecution) {
    observed.push(execution);
  }
}

@Scheduled(YEARLY, { cron: '0 0 1 1 *', missed: 'run-once', leaseMs: 2_000, abandoned: 'drop' })
class DroppedYearlyJob {
  run(execution: JobExecution) {
    observed.push(execution);
  }
}

beforeAll(async () => {
  database = await createTestDatabase();
  await database.sql(`CREATE TABLE fleet_runs (
    node text NOT NULL, name text NOT NULL, scheduled_at timestamptz, trigger text, idempotency_key text,
    fencing_token bigint, recorded_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
});
beforeEach(async () => {
  observed.length = 0;
  await database.sql('DELETE FROM "job-scheduler"');
  await database.sql('DELETE FROM fleet_runs');
});
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((node) => node.close()));
  for (const child of children.splice(0)) child.kill();
});
afterAll(async () => {
  await database.drop();
});

it('an occurrence whose instance was SIGKILLed mid-run is finished by another instance', async () => {
  await recordPreviousOccurrence();
  const first = startChild('first', 'hang');
  await waitFor('the first instance starts the occurrence', async () => (await fleetRuns(YEARLY)).length === 1, 120_000);
  const [run] = await fleetRuns(YEARLY);
  expect(run).toMatchObject({ node: 'first', trigger: 'catch-up' });
  const killedAt = Date.now();
  first.kill();
  expect((await first.exited).signal).toBe('SIGKILL');
  expect(await leaseRow(YEARLY, OCCURRENCE)).toMatchObject({ status: 'RUNNING', attempts: 1 });

  const records: JobRunRecord[] = [];
  const node = await observer(ObservedYearlyJob);
  node.scheduler.onRun((record) => records.push(record));
  // The lease (2 s) runs out a little after the kill; the next scan (every 300 ms) takes it over.
  await waitFor('the observer takes the occurrence over', () => records.some((record) => record.outcome === 'succeeded'), 30_000);

  expect(observed).toHaveLength(1);
  expect(observed[0]).toMatchObject({ name: YEARLY, trigger: 'take-over', idempotencyKey: run.idempotency_key });
  process.stdout.write(
    `take-over: started ${observed[0].startedAt.getTime() - killedAt} ms after SIGKILL (lease 2 s, scan every 300 ms, observer boot included)\n`,
  );
  expect(observed[0].scheduledAt.toISOString()).toBe(OCCURRENCE);
  expect(observed[0].fencingToken).toBeGreaterThan(Number(run.fencing_token));
  expect(records.filter((record) => record.trigger === 'take-over').map((record) => record.outcome)).toEqual(['succeeded']);
  expect(await leaseRow(YEARLY, OCCURRENCE)).toMatchObject({ status: 'SUCCESS', attempts: 2, fencingToken: String(observed[0].fencingToken) });
}, 180_000);

it('a job that kills every process that runs it has three owners, then is recorded abandoned (JOB_ABANDONED)', async () => {
  await recordPreviousOccurrence();
  // Each instance in turn takes the occurrence (the first by catch-up, the next two by take-over) and dies of it.
  for (const [index, name] of ['crash-1', 'crash-2', 'crash-3'].entries()) {
    const child = startChild(name, 'suicide');
    // Until it has run the occurrence, or died (a boot failure shows in the output of the message below).
    await waitFor(`${name} runs the occurrence`, async () => (await fleetRuns(YEARLY)).length === index + 1 || child.done, 180_000);
    const exit = await child.exited;
    expect({ name, runs: (await fleetRuns(YEARLY)).length, signal: exit.signal, output: exit.signal === 'SIGKILL' ? '' : child.output }).toEqual({
      name,
      runs: index + 1,
      signal: 'SIGKILL',
      output: '',
    });
  }
  const runs = await fleetRuns(YEARLY);
  expect(runs.map((run) => [run.node, run.trigger])).toEqual([
    ['crash-1', 'catch-up'],
    ['crash-2', 'take-over'],
    ['crash-3', 'take-over'],
  ]);
  expect(new Set(runs.map((run) => run.idempotency_key)).size).toBe(1);
  const tokens = runs.map((run) => Number(run.fencing_token));
  expect(tokens[1]).toBeGreaterThan(tokens[0]);
  expect(tokens[2]).toBeGreaterThan(tokens[1]);

  // A fourth instance finds it abandoned a third time: recorded, never run again.
  const records: JobRunRecord[] = [];
  const node = await observer(ObservedYearlyJob);
  node.scheduler.onRun((record) => records.push(record));
  await waitFor('the occurrence is recorded abandoned', () => records.length > 0, 30_000);
  await sleep(1_000);
  expect(observed).toEqual([]);
  expect(records).toEqual([expect.objectContaining({ name: YEARLY, outcome: 'abandoned', trigger: 'take-over', errorCode: 'JOB_ABANDONED' })]);
  expect(records[0].scheduledAt.toISOString()).toBe(OCCURRENCE);
  const row = await leaseRow(YEARLY, OCCURRENCE);
  expect(row).toMatchObject({
    status: 'FAIL',
    attempts: 3,
    data: { abandoned: true, attempts: 3, error: { code: 'JOB_ABANDONED', name: 'JobAbandonedError' } },
  });
}, 600_000);

it("abandoned: 'drop' ends an occurrence whose holder vanished without running it", async () => {
  await recordPreviousOccurrence();
  const first = startChild('first', 'hang');
  await waitFor('the first instance starts the occurrence', async () => (await fleetRuns(YEARLY)).length === 1, 120_000);
  first.kill();
  await first.exited;

  const records: JobRunRecord[] = [];
  const node = await observer(DroppedYearlyJob);
  node.scheduler.onRun((record) => records.push(record));
  await waitFor('the occurrence is recorded abandoned', () => records.length > 0, 30_000);
  await sleep(1_000);
  expect(observed).toEqual([]);
  expect(records).toEqual([expect.objectContaining({ outcome: 'abandoned', trigger: 'take-over', errorCode: 'JOB_ABANDONED' })]);
  expect(await leaseRow(YEARLY, OCCURRENCE)).toMatchObject({ status: 'FAIL', attempts: 1, data: { abandoned: true } });
}, 180_000);

@Scheduled(YEARLY, { cron: '0 0 1 1 *', missed: 'run-once', leaseMs: 2_000, maxAttempts: 1 })
class SingleAttemptYearlyJob {
  run(execution: JobExecution) {
    observed.push(execution);
  }
}

describe('an occurrence handed over on shutdown (expireMany) is run by the take-over, whatever abandoned and maxAttempts say', () => {
  /** The instance that stops before the instant: it claimed this year's occurrence, then handed it over. */
  const handOver = async (): Promise<string> => {
    const jobs = new JobSchedulerService(await database.dataSource({ poolSize: 1 }), { nodeId: 'stopped' });
    const lock = await jobs.acquire({ code: YEARLY, runKey: OCCURRENCE, leaseMs: 2_000 });
    if (!lock.acquired) throw new Error('the occurrence is already claimed');
    expect(await jobs.expireMany([lock])).toEqual([true]);
    expect(await leaseRow(YEARLY, OCCURRENCE)).toMatchObject({ status: 'RUNNING', attempts: 1 });
    return lock.idempotencyKey;
  };

  it.each([
    ["abandoned: 'drop'", DroppedYearlyJob],
    ['maxAttempts: 1', SingleAttemptYearlyJob],
  ])(
    '%s',
    async (_, job) => {
      const idempotencyKey = await handOver();
      const records: JobRunRecord[] = [];
      const node = await observer(job);
      node.scheduler.onRun((record) => records.push(record));
      await waitFor('the occurrence is taken over', () => records.length > 0, 30_000);
      await node.scheduler.idle();
      expect(records).toEqual([expect.objectContaining({ name: YEARLY, outcome: 'succeeded', trigger: 'take-over' })]);
      expect(observed).toEqual([expect.objectContaining({ trigger: 'take-over', idempotencyKey, fencingToken: expect.any(Number) })]);
      expect(observed[0].scheduledAt.toISOString()).toBe(OCCURRENCE);
      // The claim kept the mark of the hand-over where the previous owner is described.
      expect(await leaseRow(YEARLY, OCCURRENCE)).toMatchObject({
        status: 'SUCCESS',
        attempts: 2,
        lastError: { expired: true, ownerId: 'stopped', handedOver: true },
      });
    },
    60_000,
  );

  it("while a crashed one (no hand-over) of a job with abandoned: 'drop' is still ended unrun", async () => {
    const jobs = new JobSchedulerService(await database.dataSource({ poolSize: 1 }), { nodeId: 'crashed' });
    expect((await jobs.acquire({ code: YEARLY, runKey: OCCURRENCE, leaseMs: 2_000 })).acquired).toBe(true);
    const records: JobRunRecord[] = [];
    const node = await observer(DroppedYearlyJob);
    node.scheduler.onRun((record) => records.push(record));
    await waitFor('the occurrence is recorded abandoned', () => records.length > 0, 30_000);
    expect(observed).toEqual([]);
    expect(records).toEqual([expect.objectContaining({ outcome: 'abandoned', trigger: 'take-over', errorCode: 'JOB_ABANDONED' })]);
    expect(await leaseRow(YEARLY, OCCURRENCE)).toMatchObject({ status: 'FAIL', attempts: 1, data: { abandoned: true } });
  }, 60_000);
});

it('an occurrence found abandoned long after its lease ran out (the fleet was down) is missed, not run', async () => {
  const jobs = new JobSchedulerService(await database.dataSource({ poolSize: 1 }));
  const lock = await jobs.acquire({ code: YEARLY, runKey: OCCURRENCE, leaseMs: 2_000 });
  expect(lock.acquired).toBe(true);
  await database.sql(`UPDATE "job-scheduler" SET "modifiedAt" = now() - interval '10 minutes' WHERE "runKey" = $1`, [OCCURRENCE]);
  const records: JobRunRecord[] = [];
  const node = await observer(LateYearlyJob);
  node.scheduler.onRun((record) => records.push(record));
  await waitFor('the occurrence is recorded abandoned', () => records.length > 0, 30_000);
  expect(observed).toEqual([]);
  expect(records).toEqual([expect.objectContaining({ outcome: 'abandoned', errorCode: 'JOB_ABANDONED' })]);
  expect(String((records[0].error as Error).message)).toContain('late tolerance');
  expect(await leaseRow(YEARLY, OCCURRENCE)).toMatchObject({ status: 'FAIL', attempts: 1, data: { abandoned: true } });
}, 60_000);

@Scheduled('fleet.every-minute', { every: '1m' })
class EveryMinuteJob {
  run(execution: JobExecution) {
    observed.push(execution);
  }
}

it('an instance that stalled while another ran the job reports as missed only what nobody ran (PostgreSQL history)', async () => {
  const clock = new FixedClock(new Date('2026-05-04T10:00:30Z'));
  const [steadyTimers, stalledTimers] = [new ManualTimers(clock), new ManualTimers(clock)];
  const steady = await observer(EveryMinuteJob, { timers: steadyTimers });
  const stalled = await observer(EveryMinuteJob, { timers: stalledTimers });
  // 10:01 to 10:04 run on the steady instance while the other one's event loop is blocked.
  await steadyTimers.advance(4 * 60_000);
  // The stalled one comes back first for 10:05 (within the tolerance) and runs it: 10:01-10:04 are not missed.
  clock.set(Date.parse('2026-05-04T10:05:10Z'));
  await stalledTimers.advance(0);
  await stalled.scheduler.idle();
  expect(observed.map((execution) => execution.scheduledAt.toISOString().slice(11, 16))).toEqual(['10:01', '10:02', '10:03', '10:04', '10:05']);
  expect(stalled.scheduler.runs.filter((run) => run.outcome === 'missed')).toEqual([]);
  // Nobody runs 10:06 and 10:07: the stalled instance, back for 10:08, reports those two.
  clock.set(Date.parse('2026-05-04T10:08:05Z'));
  await stalledTimers.advance(0);
  await stalled.scheduler.idle();
  const missed = stalled.scheduler.runs.filter((run) => run.outcome === 'missed');
  expect(missed.map((run) => run.scheduledAt.toISOString().slice(11, 16))).toEqual(['10:06', '10:07']);
  expect(steady.scheduler.runs.filter((run) => run.outcome === 'missed')).toEqual([]);
}, 60_000);

it('a run waiting its jitter when the app closes never starts, and the process exits at once', async () => {
  const child = startChild('jittered', 'jitter');
  await waitFor('the instance is ready', () => event(child, 'ready') !== undefined || child.child.exitCode !== null, 120_000);
  // Occurrences fall due every second; each waits ~29.7 s of jitter, so one is waiting now.
  await sleep(2_500);
  const stoppedAt = Date.now();
  child.signal('SIGTERM');
  const exit = await child.exited;
  expect(event(child, 'closed')).toBeDefined();
  expect(exit).toMatchObject({ code: 0, signal: null });
  // Before, the jitter timer kept the process ~27 s longer and the run started after shutdown.
  expect(exit.at - stoppedAt).toBeLessThan(10_000);
  expect(await fleetRuns('fleet.jittered')).toEqual([]);
  expect(await database.sql(`SELECT "runKey" FROM "job-scheduler" WHERE code = 'fleet.jittered'`)).toEqual([]);
  expect(child.output).not.toContain('JOB_LEASE_UNAVAILABLE');
}, 180_000);

it('looks for abandoned occurrences with one statement per scan for all jobs, on the partial index of RUNNING rows', async () => {
  const jobs = Array.from({ length: 12 }, (_, index) => {
    @Scheduled(`fleet.hourly-${index}`, { every: '1h' })
    class HourlyJob {
      run() {}
    }
    return HourlyJob;
  });
  const counter = new StatementCounter();
  await observer(jobs, { takeOverScanMs: 250 }, { logger: counter, logging: true });
  counter.reset();
  await sleep(2_000);
  const scans = counter.statements.filter((text) => text.includes('FOR UPDATE SKIP LOCKED') && text.includes('"handedOver"'));
  // About 8 periods of 250 ms: one statement each for the twelve jobs (a loaded machine fires fewer).
  expect(scans.length).toBeGreaterThanOrEqual(3);
  expect(scans.length).toBeLessThanOrEqual(9);
  expect(counter.count).toBe(scans.length);

  // Many finished rows, a few running: the scan reads the expiry table's index, then rows by id, not the table.
  await database.sql(`INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", "runKey", "leaseMs", "fencingToken")
    SELECT 'k' || n, 'fleet.hourly-' || (n % 12), 'SCHEDULE', CASE WHEN n % 2000 = 0 THEN 'RUNNING' ELSE 'SUCCESS' END::"job-scheduler_status_enum",
      gen_random_uuid(), to_char(timestamptz '2020-01-01' + n * interval '1 hour', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 60000, n
    FROM generate_series(1, 20000) AS n`);
  await database.sql('ANALYZE "job-scheduler"');
  const codes = jobs.map((_, index) => `fleet.hourly-${index}`);
  const statement = createJobSchedulerStatements('"job-scheduler"', '"job-scheduler_fencingToken_seq"', '"job-scheduler_lease_expiry"').takeOverAbandoned({
    codes,
    prefixes: codes.map(() => ''),
    leaseMs: codes.map(() => 60_000),
    maxAttempts: codes.map(() => 3),
    drop: codes.map(() => false),
    lateMs: codes.map(() => null),
    claimable: codes.map(() => true),
    fallbackLeaseMs: 900_000,
    dueBy: new Date().toISOString(),
    limit: 200,
    ownerId: 'observer',
  });
  const item = (value: unknown) => (value === null ? 'NULL' : `'${String(value)}'`);
  const literal = (value: unknown) => (Array.isArray(value) ? `ARRAY[${value.map(item).join(',')}]` : item(value));
  const text = statement.text.replace(/\$(\d+)/g, (_, index: string) => literal(statement.values[Number(index) - 1]));
  const plan = (await database.sql<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`)).map((row) => row['QUERY PLAN']).join('\n');
  expect(plan).toContain('PK_job_scheduler_lease_expiry');
  expect(plan).toContain('PK_job_scheduler_id');
  expect(plan).not.toContain('Seq Scan on "job-scheduler"');
}, 120_000);
