import { randomInt } from 'node:crypto';
import {
  type JobAcquiredLease,
  type JobAcquireResult,
  JobRunsInspector,
  JobSchedulerMigrations,
  JobSchedulerService,
  JobSchedulerStatus,
} from '../../src/features';
import type { TakeOverKey } from '../../src/features/job-scheduler/lease-take-over';
import { sleep, startLeaseNodes } from '../support/lease-nodes';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * The table of lease expiries (migration 0010), kept by triggers on the job-scheduler table, is
 * what the take-over scan and the inspector's expired leases read. The rule they rely on: every
 * RUNNING row has an entry at or before its lease's expiry (else a crashed run is never taken
 * over). Checked after each way a lease starts, moves or ends, and after several independent
 * nodes raced every one of them on the same runs; and that finished runs leave no entry.
 */
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  await database.drop();
});

const EXPIRY = `(t."modifiedAt" AT TIME ZONE 'UTC') + COALESCE(t."leaseMs", 0) * INTERVAL '1 millisecond'`;

/** RUNNING rows without an entry at or before their expiry (must be none), and entries of rows not RUNNING. */
const audit = async (code: string) => {
  const [row] = await database.sql<{ uncovered: number; leftover: number; running: number; entries: number }>(
    `SELECT
       (SELECT count(*)::int FROM "job-scheduler" AS t WHERE t.code = $1 AND t.status = 'RUNNING' AND NOT EXISTS (
          SELECT 1 FROM "job-scheduler_lease_expiry" AS e WHERE e."leaseId" = t.id AND e."expiresAt" <= ${EXPIRY})) AS uncovered,
       (SELECT count(*)::int FROM "job-scheduler_lease_expiry" AS e JOIN "job-scheduler" AS t ON t.id = e."leaseId"
          WHERE t.code = $1 AND t.status <> 'RUNNING') AS leftover,
       (SELECT count(*)::int FROM "job-scheduler" AS t WHERE t.code = $1 AND t.status = 'RUNNING') AS running,
       (SELECT count(*)::int FROM "job-scheduler_lease_expiry" AS e JOIN "job-scheduler" AS t ON t.id = e."leaseId" WHERE t.code = $1) AS entries`,
    [code],
  );
  return row;
};

const held = (result: JobAcquireResult): JobAcquiredLease => {
  if (!result.acquired) throw new Error('expected the run to be acquired');
  return result;
};

const policy = (code: string): TakeOverKey => ({ code, prefix: '', leaseMs: 60_000, maxAttempts: 100, drop: false, lateMs: null, claimable: true });

describe('the table of lease expiries', () => {
  let jobs: JobSchedulerService;
  let inspector: JobRunsInspector;

  beforeAll(async () => {
    const dataSource = await database.dataSource({ poolSize: 2 });
    jobs = new JobSchedulerService(dataSource, { nodeId: 'one' });
    inspector = new JobRunsInspector(dataSource);
  });

  it('gives each lease one entry at its expiry, moves it when a lease changes owner or is cut short, and drops it when the run ends', async () => {
    const code = 'expiry.paths';
    const first = held(await jobs.acquire({ code, runKey: '2026-01-01T00:00:00.000Z', leaseMs: 60_000 }));
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 1, entries: 1 });

    // A heartbeat moves the lease later: the entry stays where it was (earlier), nothing is written to the table.
    const [before] = await database.sql<{ expiresAt: Date }>(`SELECT "expiresAt" FROM "job-scheduler_lease_expiry" WHERE "leaseId" = $1`, [first.id]);
    await sleep(20);
    expect(await jobs.heartbeat(first)).toBe(true);
    expect(await database.sql(`SELECT "expiresAt" FROM "job-scheduler_lease_expiry" WHERE "leaseId" = $1`, [first.id])).toEqual([before]);
    expect(await audit(code)).toMatchObject({ uncovered: 0, entries: 1 });

    // Completed after heartbeats: its entry goes.
    expect(await jobs.complete(first)).toBe(true);
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 0, entries: 0 });

    // Failed, then reclaimed (a FAIL row taken over by acquire): one entry, the new owner's.
    const failing = held(await jobs.acquire({ code, runKey: '2026-01-01T00:01:00.000Z', leaseMs: 60_000 }));
    expect(await jobs.fail(failing, { error: 'x' })).toBe(true);
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 0, entries: 0 });
    held(await jobs.acquire({ code, runKey: '2026-01-01T00:01:00.000Z', leaseMs: 60_000 }));
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 1, entries: 1 });

    // Handed over (expireMany): the lease ends now, so its entry moves to now, and the scans see it at once.
    const given = held(await jobs.acquire({ code, runKey: '2026-01-01T00:02:00.000Z', leaseMs: 60_000 }));
    expect(await inspector.countExpiredLeases()).toBe(0);
    expect(await jobs.expireMany([given])).toEqual([true]);
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 2, entries: 2 });
    expect((await inspector.findExpiredLeases()).map((lease) => lease.id)).toEqual([given.id]);
    expect(await inspector.countExpiredLeases()).toBe(1);

    // Taken over by the scheduler's scan: a new owner, one entry at its new lease.
    const batch = await jobs.takeOverAbandoned([policy(code)], { dueBy: Date.now(), limit: 10 });
    expect(batch.claimed.map((claim) => claim.lock.id)).toEqual([given.id]);
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 2, entries: 2 });
    expect(await inspector.countExpiredLeases()).toBe(0);

    // A lease that ran out is reclaimed by acquire: the old entry goes, the new owner's comes.
    const short = held(await jobs.acquire({ code, runKey: '2026-01-01T00:03:00.000Z', leaseMs: 150 }));
    await sleep(300);
    expect(await inspector.countExpiredLeases()).toBe(1);
    const again = held(await jobs.acquire({ code, runKey: '2026-01-01T00:03:00.000Z', leaseMs: 60_000 }));
    expect(again).toMatchObject({ id: short.id, reclaimed: true });
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 3, entries: 3 });
    expect(await inspector.countExpiredLeases()).toBe(0);

    // Handed over, then heartbeated by the same owner (its lease later again), then completed: no entry left.
    const back = held(await jobs.acquire({ code, runKey: '2026-01-01T00:04:00.000Z', leaseMs: 60_000 }));
    expect(await jobs.expireMany([back])).toEqual([true]);
    expect(await jobs.heartbeat(back)).toBe(true);
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 4, entries: 4 });
    expect(await jobs.complete(back)).toBe(true);
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 3, entries: 3 });

    // Deleted while RUNNING (an operator's DELETE): its entry goes with it.
    await database.sql(`DELETE FROM "job-scheduler" WHERE id = $1`, [again.id]);
    expect(await database.sql(`SELECT 1 FROM "job-scheduler_lease_expiry" WHERE "leaseId" = $1`, [again.id])).toEqual([]);
  });

  it('finds a lease that ran out after heartbeats outlived its entry, and not while they go on', async () => {
    const code = 'expiry.heartbeats';
    const lease = held(await jobs.acquire({ code, runKey: '2026-01-01T00:00:00.000Z', leaseMs: 400, heartbeatMs: 0 }));
    // Heartbeats for three times the lease: the entry (the first expiry) is long past, the lease is not.
    const until = Date.now() + 1_200;
    while (Date.now() < until) {
      expect(await jobs.heartbeat(lease)).toBe(true);
      expect((await inspector.findExpiredLeases()).filter((expired) => expired.id === lease.id)).toEqual([]);
      await sleep(100);
    }
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 1, entries: 1 });
    // Past the first half of the lease, each heartbeat moved the entry with the lease: the scans do
    // not read a run that lives long, only one whose lease ran out.
    const [entry] = await database.sql<{ ahead: boolean }>(
      `SELECT "expiresAt" > (CURRENT_TIMESTAMP AT TIME ZONE 'UTC') AS ahead FROM "job-scheduler_lease_expiry" WHERE "leaseId" = $1`,
      [lease.id],
    );
    expect(entry).toEqual({ ahead: true });
    // The holder stops: the lease runs out and the same entry finds it.
    await sleep(600);
    expect((await inspector.findExpiredLeases()).map((expired) => expired.id)).toContain(lease.id);
    const batch = await jobs.takeOverAbandoned([policy(code)], { dueBy: Date.now(), limit: 10 });
    expect(batch.claimed.map((claim) => claim.lock.id)).toEqual([lease.id]);
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 1, entries: 1 });
  });

  it('keeps the rule while independent nodes race every path on the same runs', async () => {
    const code = 'expiry.race';
    const nodes = await startLeaseNodes(database, 4);
    const runKeys = Array.from({ length: 12 }, (_, index) => new Date(Date.UTC(2026, 0, 1, 0, index)).toISOString());
    const until = Date.now() + 4_000;
    const node = async (service: JobSchedulerService): Promise<number> => {
      const mine: JobAcquiredLease[] = [];
      let steps = 0;
      while (Date.now() < until) {
        steps++;
        const choice = randomInt(8);
        const leaseMs = [120, 250, 2_000][randomInt(3)];
        if (choice <= 1) {
          const result = await service.acquire({ code, runKey: runKeys[randomInt(runKeys.length)], leaseMs, heartbeatMs: 0 });
          if (result.acquired) mine.push(result);
        } else if (choice === 2) {
          const picked = [...new Set(Array.from({ length: 4 }, () => runKeys[randomInt(runKeys.length)]))];
          const results = await service.acquireMany(picked.map((runKey) => ({ code, runKey, leaseMs, heartbeatMs: 0 })));
          for (const result of results) if (result.acquired) mine.push(result);
        } else if (mine.length > 0 && choice === 3) {
          await service.heartbeat(mine[randomInt(mine.length)]);
        } else if (mine.length > 0 && choice === 4) {
          const [lease] = mine.splice(randomInt(mine.length), 1);
          await (randomInt(2) === 0 ? service.complete(lease) : service.fail(lease, { error: 'raced' }));
        } else if (mine.length > 0 && choice === 5) {
          // Given back unfinished; never heartbeated after (as the scheduler's hand-over).
          await service.expireMany(mine.splice(randomInt(mine.length), 1));
        } else if (choice === 6) {
          const batch = await service.takeOverAbandoned([policy(code)], { dueBy: Date.now(), limit: 5 });
          for (const claim of batch.claimed) mine.push(claim.lock);
        } else {
          // A row finished long ago may be taken over again only as FAIL: let some runs start over.
          await database.sql(`UPDATE "job-scheduler" SET status = 'FAIL' WHERE code = $1 AND status = 'SUCCESS' AND random() < 0.3`, [code]);
        }
      }
      return steps;
    };
    const steps = await Promise.all(nodes.map(node));
    expect(steps.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(100);
    const audited = await audit(code);
    expect(audited.uncovered).toBe(0);
    expect(audited.leftover).toBe(0);
    expect(audited.entries).toBe(audited.running);
    // The runs in progress are listed from the entries: every RUNNING row, none other.
    const listed = await inspector.findRuns({ code, status: JobSchedulerStatus.RUNNING, limit: 100 });
    const running = await database.sql<{ id: string }>(`SELECT id::text AS id FROM "job-scheduler" WHERE code = $1 AND status = 'RUNNING'`, [code]);
    expect(listed.runs.map((run) => run.id).sort()).toEqual(running.map((row) => row.id).sort());
  }, 30_000);
});

describe('the function that keeps the table', () => {
  it('is called by the triggers only: no EXECUTE for PUBLIC, and no other table', async () => {
    const [acl] = await database.sql<{ public: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_proc p, aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) AS a
        WHERE p.proname = 'job-scheduler_keep_lease_expiry' AND a.grantee = 0 AND a.privilege_type = 'EXECUTE') AS public`,
    );
    expect(acl).toEqual({ public: false });
    await database.sql(`CREATE TABLE other (id uuid)`);
    await database.sql(`CREATE TRIGGER other_truncate AFTER TRUNCATE ON other FOR EACH STATEMENT EXECUTE FUNCTION "job-scheduler_keep_lease_expiry"()`);
    await expect(database.sql('TRUNCATE other')).rejects.toThrow(/keeps the lease expiries of "public"."job-scheduler" only/);
    await database.sql('DROP TABLE other');
  });

  it('inserts an entry without a conflict check (0011), and a row rewritten in place or twice in one transaction keeps one entry', async () => {
    const [{ body }] = await database.sql<{ body: string }>(`SELECT prosrc AS body FROM pg_proc WHERE proname = 'job-scheduler_keep_lease_expiry'`);
    expect(body).toContain('INSERT INTO');
    expect(body).not.toContain('ON CONFLICT');
    const jobs = new JobSchedulerService(await database.dataSource({ poolSize: 1 }), { nodeId: 'plain' });
    const code = 'expiry.plain';
    const lease = held(await jobs.acquire({ code, runKey: '2026-01-01T00:00:00.000Z', leaseMs: 60_000 }));
    const entry = () => database.sql<{ expiresAt: Date }>(`SELECT "expiresAt" FROM "job-scheduler_lease_expiry" WHERE "leaseId" = $1`, [lease.id]);
    const [before] = await entry();
    // A new fencing token with the lease's timing unchanged: the entry is deleted and inserted at
    // the same key by one call, which must not meet itself.
    await database.sql(`UPDATE "job-scheduler" SET "fencingToken" = "fencingToken" + 1000 WHERE id = $1`, [lease.id]);
    expect(await entry()).toEqual([before]);
    // Twice in one transaction, back to the first key: the second insert meets only its own deleted entries.
    await database.sql(`DO $$ BEGIN
      UPDATE "job-scheduler" SET "modifiedAt" = "modifiedAt" - INTERVAL '1 second', "fencingToken" = "fencingToken" + 1 WHERE id = '${lease.id}';
      UPDATE "job-scheduler" SET "modifiedAt" = "modifiedAt" + INTERVAL '1 second', "fencingToken" = "fencingToken" + 1 WHERE id = '${lease.id}';
    END $$`);
    expect(await entry()).toEqual([before]);
    expect(await audit(code)).toEqual({ uncovered: 0, leftover: 0, running: 1, entries: 1 });
  });

  it('keeps working under a publication FOR ALL TABLES (the primary key is the replica identity)', async () => {
    const jobs = new JobSchedulerService(await database.dataSource({ poolSize: 1 }), { nodeId: 'published' });
    await database.sql('CREATE PUBLICATION everything FOR ALL TABLES');
    try {
      const lease = held(await jobs.acquire({ code: 'expiry.published', runKey: '2026-01-01T00:00:00.000Z', leaseMs: 60_000 }));
      expect(await jobs.complete(lease)).toBe(true);
      expect(await audit('expiry.published')).toEqual({ uncovered: 0, leftover: 0, running: 0, entries: 0 });
    } finally {
      await database.sql('DROP PUBLICATION everything');
    }
  });
});

describe('a database before the migration', () => {
  it('keeps the scans working on the table itself, and the migration gives the RUNNING rows their entries', async () => {
    const older = await createTestDatabase();
    try {
      const migrator = await older.dataSource({ migrations: [...JobSchedulerMigrations], poolSize: 1 });
      // 0011 (the function's plain insert), then 0010 (the table and its triggers).
      await migrator.undoLastMigration();
      await migrator.undoLastMigration();
      expect(await older.sql(`SELECT to_regclass('"job-scheduler_lease_expiry"')::text AS t`)).toEqual([{ t: null }]);
      const dataSource = await older.dataSource({ poolSize: 2 });
      const jobs = new JobSchedulerService(dataSource, { nodeId: 'older' });
      const inspector = new JobRunsInspector(dataSource);
      const code = 'expiry.older';
      const lease = held(await jobs.acquire({ code, runKey: '2026-01-01T00:00:00.000Z', leaseMs: 150 }));
      const live = held(await jobs.acquire({ code, runKey: '2026-01-01T00:01:00.000Z', leaseMs: 60_000 }));
      await sleep(300);
      expect(await inspector.countExpiredLeases()).toBe(1);
      expect((await inspector.findExpiredLeases()).map((expired) => expired.id)).toEqual([lease.id]);
      expect((await jobs.takeOverAbandoned([policy(code)], { dueBy: Date.now(), limit: 10 })).claimed.map((claim) => claim.lock.id)).toEqual([lease.id]);
      expect((await inspector.findRuns({ code, status: JobSchedulerStatus.RUNNING })).runs.map((run) => run.id).sort()).toEqual([lease.id, live.id].sort());

      await migrator.runMigrations();
      const entries = await older.sql<{ leaseId: string }>(`SELECT "leaseId"::text AS "leaseId" FROM "job-scheduler_lease_expiry" ORDER BY "expiresAt"`);
      expect(entries.map((entry) => entry.leaseId).sort()).toEqual([lease.id, live.id].sort());
      // A node started before the migration goes on with the statements it uses (the table itself)...
      expect(await inspector.countExpiredLeases()).toBe(0);
      // ...and one started after reads the entries.
      const after = new JobRunsInspector(await older.dataSource({ poolSize: 1 }));
      expect(await after.countExpiredLeases()).toBe(0);
    } finally {
      await older.drop();
    }
  });
});
