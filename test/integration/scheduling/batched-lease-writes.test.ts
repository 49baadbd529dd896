import { Module, type Type } from '@nestjs/common';
import { Client } from 'pg';
import { Scheduled, ScheduledJobsService, SchedulingModule } from '../../../src/features';
import { type NestNode, startNestNode } from '../../support/nest-node';
import { sleep } from '../../support/lease-nodes';
import { StatementLog } from '../../support/statement-counter';

import { createTestDatabase, type TestDatabase } from '../../support/test-database';

/**
 * The heartbeats, completes and fails of runs held together share statements. A real fault on
 * such a statement: its backend is terminated while a table lock held by the test blocks it
 * (57P01, a dropped connection). It is sent again (whole, as a retry, for a complete; by each
 * hold's own retry, for a heartbeat), never as a statement per run, and no run is lost or run twice.
 */
const JOBS = 20;
const EVERY_MS = 3_000;

let database: TestDatabase;
const nodes: NestNode[] = [];
let locker: Client | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await locker?.end().catch(() => undefined);
  await Promise.all(nodes.map((node) => node.close()));
  await database.drop();
});

const isComplete = (text: string): boolean => text.includes(`SET "status" = 'SUCCESS'`);
const isBatchComplete = (text: string): boolean => isComplete(text) && text.includes('unnest($1::uuid[], $2::uuid[], $3::text[])');
const isRetry = (text: string): boolean => text.includes(`IN ('RUNNING', 'SUCCESS')`);

/** The pid of a backend waiting on a lock for a statement `matching`, once there is one. */
const waitingOnLock = async (what: string, matching: (query: string) => boolean, withinMs: number): Promise<number> => {
  const until = Date.now() + withinMs;
  for (;;) {
    const rows = await database.sql<{ pid: number; query: string }>(
      `SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE "job-scheduler"%'`,
    );
    const found = rows.find((row) => matching(row.query));
    if (found) return found.pid;
    if (Date.now() > until) throw new Error(`no ${what} waited on the lock within ${withinMs} ms`);
    await sleep(50);
  }
};
const waitingComplete = (retry: boolean, withinMs: number): Promise<number> =>
  waitingOnLock(`batched complete (retry: ${retry})`, (query) => isBatchComplete(query) && isRetry(query) === retry, withinMs);
const isHeartbeat = (text: string): boolean => /SET "modifiedAt" = CURRENT_TIMESTAMP\s+(FROM|WHERE)/.test(text);

/** One instance running these jobs (claimed at the instant, in one statement: JOBS is below the smallest claim batch), its statements logged. */
const startJobs = async (nodeId: string, jobs: Type[]) => {
  const counter = new StatementLog();
  @Module({ providers: jobs })
  class JobsModule {}
  const node = await startNestNode(database.url, {
    jobScheduler: { nodeId },
    typeorm: { logging: ['query'], logger: counter, poolSize: 10 },
    imports: [SchedulingModule.forRoot({ metrics: false, retention: false, claimAheadMs: 0 }), JobsModule],
  });
  nodes.push(node);
  return { counter, service: node.app.get(ScheduledJobsService) };
};

/** Holds a lock that blocks every write to the table (reads go on) until `unlockTable`. */
const lockTable = async (): Promise<void> => {
  locker = new Client({ connectionString: database.url });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE "job-scheduler" IN EXCLUSIVE MODE');
};
const unlockTable = async (): Promise<void> => {
  await locker?.query('COMMIT');
  await locker?.end();
  locker = undefined;
};

/** The records of the instant `due`, once there are JOBS of them (or `withinMs` passed). */
const recordsOf = async (service: ScheduledJobsService, due: number, withinMs: number) => {
  const until = Date.now() + withinMs;
  const of = () => service.runs.filter((record) => record.scheduledAt.getTime() === due);
  while (of().length < JOBS && Date.now() < until) await sleep(50);
  return of();
};

/** The statements `counter` saw that `match` and carry one of these lease ids ($1). */
const statementsFor = (counter: StatementLog, ids: ReadonlySet<string>, match: (text: string) => boolean) =>
  counter.sent.filter(({ text, parameters }) => match(text) && [parameters[0]].flat().some((id) => ids.has(id as string)));

describe('a batched complete statement whose connection drops', () => {
  it('is sent again whole as a retry: every run once, SUCCESS with its own data, and no complete statement per run', async () => {
    const ran = new Map<string, number>();
    let firstStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    let release: () => void = () => undefined;
    const lockHeld = new Promise<void>((resolve) => (release = resolve));
    const jobs: Type[] = Array.from({ length: JOBS }, (_, index) => {
      const name = `complete-fault.job-${String(index).padStart(2, '0')}`;
      @Scheduled(name, { every: `${EVERY_MS / 1000}s` })
      class FaultJob {
        async run(): Promise<void> {
          ran.set(name, (ran.get(name) ?? 0) + 1);
          firstStarted();
          // Every handler returns once the test holds the table lock: their completes meet it.
          await lockHeld;
        }
      }
      return FaultJob;
    });
    const { counter, service } = await startJobs('complete-fault', jobs);
    await started;
    const due = Math.floor(Date.now() / EVERY_MS) * EVERY_MS;
    await lockTable();
    release();

    const first = await waitingComplete(false, 10_000);
    await database.sql('SELECT pg_terminate_backend($1)', [first]);
    await waitingComplete(true, 10_000);
    await unlockTable();
    const records = await recordsOf(service, due, 10_000);

    const runKey = new Date(due).toISOString();
    const rows = await database.sql<{ id: string; status: string; data: { handlerMs?: number } | null }>(
      `SELECT id, status::text AS status, data FROM "job-scheduler" WHERE "runKey" = $1 ORDER BY code`,
      [runKey],
    );
    expect(rows).toHaveLength(JOBS);
    for (const row of rows) {
      expect(row.status).toBe('SUCCESS');
      expect(row.data).toEqual({ handlerMs: expect.any(Number) });
    }
    expect([...ran.values()]).toEqual(Array.from({ length: JOBS }, () => 1));
    expect(records.map((record) => record.outcome)).toEqual(Array.from({ length: JOBS }, () => 'succeeded'));
    // Two statements for the JOBS completes of that instant: the one whose connection dropped, and its retry.
    const ids = new Set(rows.map((row) => row.id));
    const completes = statementsFor(counter, ids, isComplete);
    for (const { parameters } of completes) expect(new Set(parameters[0] as string[])).toEqual(ids);
    expect(completes.map(({ text }) => [isBatchComplete(text), isRetry(text)])).toEqual([
      [true, false],
      [true, true],
    ]);
  });
});

describe('runs that fail together', () => {
  it('are failed by one statement, each row with its own error and run time', async () => {
    let firstStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    const jobs: Type[] = Array.from({ length: JOBS }, (_, index) => {
      const name = `fail-together.job-${String(index).padStart(2, '0')}`;
      @Scheduled(name, { every: `${EVERY_MS / 1000}s` })
      class FailingJob {
        async run(): Promise<void> {
          firstStarted();
          throw new Error(`${name} could not reach its dependency`);
        }
      }
      return FailingJob;
    });
    const { counter, service } = await startJobs('fail-together', jobs);
    await started;
    const due = Math.floor(Date.now() / EVERY_MS) * EVERY_MS;
    const records = await recordsOf(service, due, 10_000);

    const rows = await database.sql<{ id: string; code: string; status: string; data: { error?: { message?: string }; handlerMs?: number } }>(
      `SELECT id, code, status::text AS status, data FROM "job-scheduler" WHERE "runKey" = $1 AND code LIKE 'fail-together.%' ORDER BY code`,
      [new Date(due).toISOString()],
    );
    expect(rows).toHaveLength(JOBS);
    for (const row of rows) {
      expect(row.status).toBe('FAIL');
      expect(row.data.error?.message).toBe(`${row.code} could not reach its dependency`);
      expect(row.data.handlerMs).toEqual(expect.any(Number));
    }
    expect(records.map((record) => record.errorCode)).toEqual(Array.from({ length: JOBS }, () => 'JOB_FAILED'));
    const fails = statementsFor(counter, new Set(rows.map((row) => row.id)), (text) => text.includes(`SET "status" = 'FAIL'`));
    // Failed together in one statement (one per turn at worst), not one per run.
    expect(fails.length).toBeGreaterThanOrEqual(1);
    expect(fails.length).toBeLessThanOrEqual(2);
  });
});

describe('runs held together', () => {
  it('heartbeat together in one statement; when its connection drops, each hold retries, and every run completes once with its lease', async () => {
    const started: number[] = [];
    const jobs: Type[] = Array.from({ length: JOBS }, (_, index) => {
      const name = `held-together.job-${String(index).padStart(2, '0')}`;
      // Lease 9 s: a heartbeat every 3 s; the handler outlasts one.
      @Scheduled(name, { every: '10s', leaseMs: 9_000 })
      class LongJob {
        async run(): Promise<void> {
          started.push(Date.now());
          await sleep(5_000);
        }
      }
      return LongJob;
    });
    const { counter, service } = await startJobs('held-together', jobs);
    while (started.length < JOBS) await sleep(50);
    const due = Math.floor(started[0] / 10_000) * 10_000;
    // Before the first heartbeat (3 s after the claim): every write to the table waits.
    await sleep(Math.max(0, started[0] + 1_500 - Date.now()));
    await lockTable();
    const first = await waitingOnLock('batched heartbeat', (query) => isHeartbeat(query) && query.includes('unnest('), 10_000);
    await database.sql('SELECT pg_terminate_backend($1)', [first]);
    // Each hold retries (backoff and jitter): some retry waits on the lock too.
    await waitingOnLock('retried heartbeat', (query) => isHeartbeat(query), 10_000);
    await unlockTable();
    const records = await recordsOf(service, due, 15_000);
    expect(records.map((record) => record.outcome)).toEqual(Array.from({ length: JOBS }, () => 'succeeded'));
    const rows = await database.sql<{ id: string; status: string; attempts: number }>(
      `SELECT id, status::text AS status, attempts FROM "job-scheduler" WHERE "runKey" = $1 AND code LIKE 'held-together.%'`,
      [new Date(due).toISOString()],
    );
    expect(rows.map((row) => [row.status, row.attempts])).toEqual(Array.from({ length: JOBS }, () => ['SUCCESS', 1]));
    // The first heartbeat of the JOBS runs was one statement for all of them.
    const ids = new Set(rows.map((row) => row.id));
    const beats = statementsFor(counter, ids, isHeartbeat);
    expect(new Set(beats[0].parameters[0] as string[])).toEqual(ids);
  });
});
