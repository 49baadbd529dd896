import { createJobScheduler, type StandaloneJobScheduler } from '../../../src/features';
import { createJobSchedulerStatements } from '../../../src/features/job-scheduler/job-scheduler.statements';
import { buildLockKey } from '../../../src/features/job-scheduler/job-identity';
import type { TakeOverKey } from '../../../src/features/job-scheduler/lease-take-over';
import { systemTimers } from '../../../src/features/job-scheduler/system-timers';
import {
  type AbandonedOccurrenceHost,
  AbandonedOccurrenceScan,
  PROBE_ABOVE_KEYS,
  type TakeOverPolicy,
  type TakenOverOccurrence,
} from '../../../src/features/scheduling/occurrence/abandoned-occurrences';
import { scheduleRunKeyPrefix } from '../../../src/features/scheduling/occurrence/occurrence-keys';
import type { AbandonedOccurrenceStore } from '../../../src/features/scheduling/scheduler-ports';
import { StatementCounter } from '../../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

const HANDLER = 'scale.task';
/** Dynamic schedules run here: four times the count above which a scan asks which keys to send. */
const SCHEDULES = PROBE_ABOVE_KEYS * 4;
const scheduleId = (n: number): string => `tenant-${String(n).padStart(5, '0')}/task`;
/** Crashed holders: their leases ran out 5 minutes ago. Schedule "gone" is run by no instance here. */
const CRASHED = [scheduleId(7), scheduleId(1_234), 'gone'];

let database: TestDatabase;
let lease: StandaloneJobScheduler | undefined;
let scan: AbandonedOccurrenceScan | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await scan?.stop();
  await lease?.close();
  await database.drop();
});

describe('the take-over scan of an instance running thousands of dynamic schedules', () => {
  it('reads only the leases that ran out, and sends only their keys', async () => {
    // The occurrence due a minute ago, claimed ahead by every schedule (lease 60 s, heartbeating),
    // three of them by holders that crashed.
    const instant = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000).toISOString();
    const ids = [...Array.from({ length: SCHEDULES }, (_, index) => scheduleId(index + 1)), 'gone'];
    const runKeys = ids.map((id) => `${scheduleRunKeyPrefix(id)}${instant}`);
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, name, type, "runKey", status, "ownerToken", "ownerId", "leaseMs", "modifiedAt")
       SELECT lock_key, $3, $3, 'SCHEDULE', run_key, 'RUNNING', gen_random_uuid(), 'crashed-or-alive', 60000,
         CASE WHEN id = ANY($4::text[]) THEN now() - interval '5 minutes' ELSE now() END
       FROM unnest($1::text[], $2::text[], $5::text[]) AS seeded(lock_key, run_key, id)`,
      [runKeys.map((runKey) => buildLockKey('SCHEDULE' as never, HANDLER, runKey)), runKeys, HANDLER, CRASHED, ids],
    );
    // As autovacuum would (this machine's server runs without it): the planner's statistics.
    await database.sql('ANALYZE "job-scheduler"');
    await database.sql('ANALYZE "job-scheduler_lease_expiry"');

    const counter = new StatementCounter();
    lease = await createJobScheduler({ dataSource: await database.dataSource({ logging: ['query'], logger: counter }) }, { nodeId: 'scanner' });
    const service = lease.jobs;
    const sentKeys: TakeOverKey[][] = [];
    const store: AbandonedOccurrenceStore = {
      abandonedKeys: (codes, options) => service.abandonedKeys(codes, options),
      takeOverAbandoned: (keys, options) => {
        sentKeys.push([...keys]);
        return service.takeOverAbandoned(keys, options);
      },
      abandonOccurrences: (occurrences) => service.abandonOccurrences(occurrences),
      abandonRunKeyRanges: (ranges) => service.abandonRunKeyRanges(ranges),
      expireMany: (leases) => service.expireMany(leases),
      fail: (held, data) => service.fail(held, data),
    };
    const jobs: TakeOverPolicy[] = ids
      .filter((id) => id !== 'gone')
      .map((id) => ({ name: HANDLER, abandoned: 'take-over', maxAttempts: 3, missed: 'run-once', dynamicSchedule: { id, data: null } }));
    const takenOver: Array<{ scheduleId: string; occurrence: TakenOverOccurrence }> = [];
    const host: AbandonedOccurrenceHost = {
      enabledJobs: () => jobs,
      takeOver: (job, occurrence) => {
        takenOver.push({ scheduleId: job.dynamicSchedule?.id as string, occurrence });
        return true;
      },
      record: () => undefined,
    };
    scan = new AbandonedOccurrenceScan(store, host, systemTimers, { warn: () => undefined } as never, 60_000, 60_000);
    scan.start();
    counter.reset();

    await scan.scan();
    // One read of the keys found, then one claim with those two keys only (not 2,000).
    expect(counter.count).toBe(2);
    expect(sentKeys.map((keys) => keys.map((key) => key.prefix).sort())).toEqual([[scheduleRunKeyPrefix(CRASHED[0]), scheduleRunKeyPrefix(CRASHED[1])].sort()]);
    expect(takenOver.map(({ scheduleId: id, occurrence }) => [id, new Date(occurrence.scheduledAt).toISOString()]).sort()).toEqual([
      [CRASHED[0], instant],
      [CRASHED[1], instant],
    ]);
    const rows = await database.sql<{ prefix: string; attempts: number; ownerId: string }>(
      `SELECT substring("runKey" from '^schedule=[^ ]+ ') AS prefix, attempts, "ownerId" FROM "job-scheduler"
       WHERE attempts > 1 OR "ownerId" <> 'crashed-or-alive' OR "runKey" LIKE 'schedule=gone %' ORDER BY 1`,
    );
    expect(rows).toEqual([
      { prefix: scheduleRunKeyPrefix('gone'), attempts: 1, ownerId: 'crashed-or-alive' },
      { prefix: scheduleRunKeyPrefix(CRASHED[0]), attempts: 2, ownerId: 'scanner' },
      { prefix: scheduleRunKeyPrefix(CRASHED[1]), attempts: 2, ownerId: 'scanner' },
    ]);

    // Nothing more of this instance's to take over (the one left is of a schedule not run here):
    // a scan is that one read.
    counter.reset();
    await scan.scan();
    expect(counter.count).toBe(1);
    expect(sentKeys).toHaveLength(1);
    await scan.stop();

    // The read finds the lapsed leases on the expiry table's index without visiting the others.
    const probe = createJobSchedulerStatements('"job-scheduler"', '"job-scheduler_fencingToken_seq"', '"job-scheduler_lease_expiry"').abandonedKeys(
      [HANDLER],
      60_000,
      new Date().toISOString(),
      200,
    );
    const [plan] = await database.sql<{ 'QUERY PLAN': unknown }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${probe.text}`, probe.values as unknown[]);
    const nodes: Array<Record<string, unknown>> = [];
    const walk = (node: Record<string, unknown>): void => {
      nodes.push(node);
      for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
    };
    walk((plan['QUERY PLAN'] as Array<{ Plan: Record<string, unknown> }>)[0].Plan);
    const indexRead = nodes.find((node) => node['Index Name'] === 'PK_job_scheduler_lease_expiry');
    expect(indexRead).toBeDefined();
    // The lapsed lease left, and the two taken over whose entries are deleted but still in the
    // index until a vacuum (a bitmap scan counts them): not the 2,000 others.
    expect(indexRead?.['Actual Rows']).toBeLessThanOrEqual(3);
    expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'job-scheduler')).toEqual([]);
  }, 60_000);
});
