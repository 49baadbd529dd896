import { JobSchedulerService } from '../../../src/features';
import type { JobAcquiredLease } from '../../../src/features/job-scheduler/job-scheduler.types';
import { JobScheduleEngine } from '../../../src/features/scheduling/job-schedule-engine';
import { occurrenceRunKey } from '../../../src/features/scheduling/occurrence/occurrence-keys';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { systemTimers } from '../../../src/features/scheduling/scheduler-ports';
import type { JobRunRecord } from '../../../src/features/scheduling/scheduling.types';
import { sleep } from '../../support/lease-nodes';
import { StatementCounter } from '../../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

/**
 * A rolling restart hands over what the stopped instance had claimed ahead: many rows left
 * RUNNING with their lease run out (expireMany). The instances left share them (each row is
 * claimed by one, in batches) and run every one of them once, within two scan periods.
 */
const JOBS = 1_200;
const SCAN_MS = 2_500;
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

let database: TestDatabase;
const engines: JobScheduleEngine[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.stop()));
});
afterAll(async () => {
  await database.drop();
});

const names = Array.from({ length: JOBS }, (_, index) => `fleet.hand-over-${index}`);

/** One instance: an engine of its own over a lease on a pool of its own, with every job. */
const instance = async (node: string, ran: Map<string, string[]>, records: JobRunRecord[]) => {
  const statements = new StatementCounter();
  const lease = new JobSchedulerService(await database.dataSource({ poolSize: 4, logging: ['query'], logger: statements }), { nodeId: node });
  const engine = new JobScheduleEngine({ timers: systemTimers, lease, abandoned: lease, takeOverScanMs: SCAN_MS, claimAheadMs: 0, logger: silent });
  for (const name of names) {
    engine.register({
      declaration: checkJobDeclaration(name, { every: '1d', leaseMs: 30_000 }),
      handler: () => void ran.set(name, [...(ran.get(name) ?? []), node]),
      enabled: true,
    });
  }
  engine.onRun((record) => records.push(record));
  engines.push(engine);
  return { engine, statements };
};

it(`${JOBS} occurrences handed over on shutdown are shared by three instances and each run once within two scan periods`, async () => {
  const ran = new Map<string, string[]>();
  const records: JobRunRecord[] = [];
  const nodes = await Promise.all(['a', 'b', 'c'].map((node) => instance(node, ran, records)));
  await Promise.all(nodes.map(({ engine }) => engine.start()));

  // The instance that stops: it claimed today's occurrence of every job, then handed them over.
  const leaving = new JobSchedulerService(await database.dataSource({ poolSize: 1 }), { nodeId: 'leaving' });
  const today = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  const locks: JobAcquiredLease[] = [];
  for (let start = 0; start < JOBS; start += 1_000) {
    const claimed = await leaving.acquireMany(names.slice(start, start + 1_000).map((code) => ({ code, runKey: occurrenceRunKey(today), leaseMs: 30_000 })));
    for (const lock of claimed) if (lock.acquired) locks.push(lock);
  }
  expect(locks).toHaveLength(JOBS);
  for (const { statements } of nodes) statements.reset();
  const handedOverAt = Date.now();
  expect((await leaving.expireMany(locks)).every(Boolean)).toBe(true);

  const succeeded = async () =>
    (await database.sql<{ count: number }>(`SELECT count(*)::int AS count FROM "job-scheduler" WHERE status = 'SUCCESS' AND attempts = 2`))[0].count;
  while ((await succeeded()) < JOBS && Date.now() - handedOverAt < 6 * SCAN_MS) await sleep(100);
  const drainedMs = Date.now() - handedOverAt;
  await Promise.all(nodes.map(({ engine }) => engine.idle()));

  const perNode = new Map<string, number>();
  for (const nodesOfJob of ran.values()) for (const node of nodesOfJob) perNode.set(node, (perNode.get(node) ?? 0) + 1);
  const scans = nodes.map(
    ({ statements }) => statements.statements.filter((text) => text.includes('FOR UPDATE SKIP LOCKED') && text.includes('"handedOver"')).length,
  );
  process.stdout.write(
    `hand-over drain: ${JOBS} occurrences on 3 instances in ${drainedMs} ms (scan every ${SCAN_MS} ms); runs per instance ${JSON.stringify(Object.fromEntries(perNode))}; take-over statements per instance ${JSON.stringify(scans)}\n`,
  );
  // Each exactly once, by take-over, within two scan periods.
  expect(ran.size).toBe(JOBS);
  expect([...ran.values()].filter((nodesOfJob) => nodesOfJob.length !== 1)).toEqual([]);
  expect(await succeeded()).toBe(JOBS);
  expect(drainedMs).toBeLessThan(2 * SCAN_MS);
  const takenOver = records.filter((record) => record.trigger === 'take-over');
  expect(takenOver).toHaveLength(JOBS);
  expect(takenOver.every((record) => record.outcome === 'succeeded')).toBe(true);
  // The work is spread: no instance ran them all.
  expect([...perNode.values()].every((count) => count < JOBS)).toBe(true);
  expect(perNode.size).toBeGreaterThanOrEqual(2);
}, 120_000);
