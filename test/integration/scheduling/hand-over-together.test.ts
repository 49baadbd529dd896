import { Client } from 'pg';
import { JobSchedulerService } from '../../../src/features';
import { JobScheduleEngine } from '../../../src/features/scheduling/job-schedule-engine';
import { occurrenceRunKey } from '../../../src/features/scheduling/occurrence/occurrence-keys';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { systemTimers } from '../../../src/features/scheduling/scheduler-ports';
import type { JobRunRecord } from '../../../src/features/scheduling/scheduling.types';
import { sleep } from '../../support/lease-nodes';
import { StatementLog } from '../../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

/**
 * An instance that stops while an instant's claims are in flight refuses to start each of them:
 * it hands them over (expireMany) together, in one statement, not one per run. The fault is
 * real: a table lock held by the test keeps the instant's claim waiting until the stop began.
 * Another instance then runs each of them once, by take-over.
 */
const JOBS = 20;
const EVERY_MS = 3_000;
const SCAN_MS = 1_000;
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

let database: TestDatabase;
const engines: JobScheduleEngine[] = [];
let locker: Client | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await locker?.end().catch(() => undefined);
  await Promise.all(engines.map((engine) => engine.stop()));
  await database.drop();
});

const names = Array.from({ length: JOBS }, (_, index) => `hand-over-together.job-${String(index).padStart(2, '0')}`);

/** Who ran which job at which instant: `${name}@${scheduledAt}` → nodes. */
type Ran = Map<string, string[]>;
/** The nodes that ran any job at this instant (instants before and after it run as usual). */
const ranAt = (ran: Ran, scheduledAt: number): string[] => [...ran.entries()].filter(([key]) => key.endsWith(`@${scheduledAt}`)).flatMap(([, nodes]) => nodes);

/** One instance: an engine over a lease on a pool of its own, every job, its statements logged. */
const instance = async (node: string, ran: Ran, records: JobRunRecord[]) => {
  const log = new StatementLog();
  const dataSource = await database.dataSource({ poolSize: 4, logging: ['query'], logger: log });
  const lease = new JobSchedulerService(dataSource, { nodeId: node });
  const engine = new JobScheduleEngine({ timers: systemTimers, lease, abandoned: lease, takeOverScanMs: SCAN_MS, claimAheadMs: 0, logger: silent });
  for (const name of names) {
    engine.register({
      declaration: checkJobDeclaration(name, { every: `${EVERY_MS / 1000}s`, leaseMs: 30_000 }),
      handler: ({ scheduledAt }) => {
        const key = `${name}@${scheduledAt.getTime()}`;
        ran.set(key, [...(ran.get(key) ?? []), node]);
      },
      enabled: true,
    });
  }
  engine.onRun((record) => records.push(record));
  engines.push(engine);
  return { engine, log, dataSource };
};

/** Once a backend waits on a lock for a statement on the table that `matches`. */
const waitingOnLock = async (matches: (query: string) => boolean, withinMs: number): Promise<void> => {
  const until = Date.now() + withinMs;
  for (;;) {
    const rows = await database.sql<{ query: string }>(
      `SELECT query FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%"job-scheduler"%'`,
    );
    if (rows.some((row) => matches(row.query))) return;
    if (Date.now() > until) throw new Error(`no statement waited on the lock within ${withinMs} ms`);
    await sleep(20);
  }
};

it(`${JOBS} claims won after their instance began to stop are handed over in one statement, then each run once elsewhere`, async () => {
  const ran: Ran = new Map();
  const records: JobRunRecord[] = [];
  const leaving = await instance('leaving', ran, records);
  await leaving.engine.start();

  // The next instant at least a second away: lock the table before it, so that its claim waits.
  let due = Math.ceil(Date.now() / EVERY_MS) * EVERY_MS;
  if (due - Date.now() < 1_000) due += EVERY_MS;
  await sleep(due - 500 - Date.now());
  locker = new Client({ connectionString: database.url });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE "job-scheduler" IN EXCLUSIVE MODE');
  await waitingOnLock((query) => query.includes('INSERT INTO'), 10_000);

  // The stop begins while the claim waits; the claim wins once the lock goes.
  const stopped = leaving.engine.stop();
  await sleep(300);
  await locker.query('COMMIT');
  await locker.end();
  locker = undefined;
  await stopped;
  // As an application does once its scheduler stopped: the pool closes. Nothing is left to send.
  await leaving.dataSource.destroy();

  const runKey = occurrenceRunKey(due);
  const rows = await database.sql<{ id: string; status: string; data: { handedOver?: boolean } | null }>(
    `SELECT id, status::text AS status, data FROM "job-scheduler" WHERE "runKey" = $1 AND code LIKE 'hand-over-together.%'`,
    [runKey],
  );
  expect(rows).toHaveLength(JOBS);
  expect(rows.every((row) => row.status === 'RUNNING' && row.data?.handedOver === true)).toBe(true);
  // (When the engine started less than a second before an instant, that earlier instant ran here as usual.)
  expect(ranAt(ran, due)).toEqual([]);
  // Handed over together: one statement for all of them (a second at worst), not one per run.
  const ids = new Set(rows.map((row) => row.id));
  const handOvers = leaving.log.sent.filter(
    ({ text, parameters }) => text.includes('"handedOver": true') && [parameters[0]].flat().some((id) => ids.has(id as string)),
  );
  expect(handOvers.length).toBeGreaterThanOrEqual(1);
  expect(handOvers.length).toBeLessThanOrEqual(2);
  expect(new Set(handOvers.flatMap(({ parameters }) => parameters[0] as string[]))).toEqual(ids);
  expect(records.filter((record) => record.scheduledAt.getTime() === due).map((record) => record.errorCode)).toEqual(
    Array.from({ length: JOBS }, () => 'JOB_SHUTDOWN'),
  );

  // Another instance takes each over and runs it once.
  const staying = await instance('staying', ran, records);
  await staying.engine.start();
  const succeeded = async () =>
    (
      await database.sql<{ count: number }>(`SELECT count(*)::int AS count FROM "job-scheduler" WHERE "runKey" = $1 AND status = 'SUCCESS' AND attempts = 2`, [
        runKey,
      ])
    )[0].count;
  const until = Date.now() + 20_000;
  while ((await succeeded()) < JOBS && Date.now() < until) await sleep(100);
  await staying.engine.stop();
  expect(await succeeded()).toBe(JOBS);
  const takenOver = records.filter((record) => record.scheduledAt.getTime() === due && record.trigger === 'take-over');
  expect(takenOver.map((record) => record.outcome)).toEqual(Array.from({ length: JOBS }, () => 'succeeded'));
  expect(takenOver.map((record) => record.name).sort()).toEqual(names);
  expect(ranAt(ran, due).sort()).toEqual(Array.from({ length: JOBS }, () => 'staying'));
}, 60_000);
