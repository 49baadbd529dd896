import { Client } from 'pg';
import {
  InvalidJobIdentityOptionsError,
  type JobAcquireOptions,
  type JobSchedulerService,
  JobSchedulerStatus,
  JobSchedulerType,
  LostJobLeaseError,
} from '../../../src/features';
import { buildLockKey } from '../../../src/features/job-scheduler/job-identity';
import { sleep } from '../../support/lease-nodes';
import type { StatementCounter } from '../../support/statement-counter';
import { aborted } from '../../support/abortable-work';

/**
 * The lease's behaviour, written once and run against every supported configuration (as
 * ShedLock runs one provider test suite against every lock provider): default DataSource, named
 * DataSource, forRootAsync, another schema, another search_path, behind PgBouncer.
 */
export interface LeaseContractTarget {
  /** Independent nodes, each with a pool (and application) of its own: at least 3. */
  nodes: JobSchedulerService[];
  /** One more node, whose statements `counter` records. */
  counted: JobSchedulerService;
  counter: StatementCounter;
  /** The lease table as SQL names it on the inspection connection (`sql`). */
  table: string;
  /** Inspects and rigs the table on a direct connection of its own (never through a pooler). */
  sql<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

export interface LeaseContractConfiguration {
  name: string;
  /**
   * Behind a pooler in transaction mode: consecutive statements of a client may run on different
   * server sessions, so no statement of the whole suite may be a named prepared statement.
   */
  transactionPooler?: boolean;
  /** Why this configuration cannot run on this machine, if it cannot. */
  skipReason?: () => string | undefined;
  start(): Promise<LeaseContractTarget>;
}

interface Row {
  id: string;
  status: JobSchedulerStatus;
  ownerToken: string;
  fencingToken: string;
  attempts: number;
  data: unknown;
  lastError: unknown;
  code: string;
  runKey: string | null;
  name: string | null;
  modifiedAt: Date;
}

const ZERO_UUID = '00000000-0000-4000-8000-000000000000';

/** Statements that would need a session of their own, which a transaction pooler does not give. */
const SESSION_STATE =
  /pg_advisory|pg_try_advisory|^\s*(SET|RESET|PREPARE|EXECUTE|DEALLOCATE|LISTEN|UNLISTEN|BEGIN|START TRANSACTION|DISCARD)\b|set_config|CREATE TEMP/im;

export const describeLeaseContract = (configuration: LeaseContractConfiguration, extra?: (target: () => LeaseContractTarget) => void): void => {
  const skipReason = configuration.skipReason?.();
  if (skipReason) {
    process.stderr.write(`\nlease contract "${configuration.name}" skipped: ${skipReason}\n`);
    describe(`lease contract: ${configuration.name}`, () => {
      it.skip(`skipped: ${skipReason}`, () => undefined);
    });
    return;
  }

  describe(`lease contract: ${configuration.name}`, () => {
    let target: LeaseContractTarget;
    // What reaches the driver, over the whole suite (only behind a transaction pooler).
    let driverQueries: jest.SpiedFunction<Client['query']> | undefined;
    beforeAll(async () => {
      if (configuration.transactionPooler) driverQueries = jest.spyOn(Client.prototype, 'query');
      target = await configuration.start();
    }, 60_000);
    afterAll(async () => {
      driverQueries?.mockRestore();
      await target?.close();
    });

    let sequence = 0;
    const run = (extraOptions: Partial<JobAcquireOptions> = {}): JobAcquireOptions => ({
      code: 'contract-job',
      runKey: `tick-${++sequence}`,
      ...extraOptions,
    });
    const rowOf = async (id: string): Promise<Row> => {
      const [row] = await target.sql<Row>(`SELECT * FROM ${target.table} WHERE "id" = $1`, [id]);
      return row;
    };
    /** As if the owner had gone quiet `ms` earlier than it did. */
    const age = (id: string, ms: number) =>
      target.sql(`UPDATE ${target.table} SET "modifiedAt" = "modifiedAt" - $2 * INTERVAL '1 millisecond' WHERE "id" = $1`, [id, ms]);
    const acquired = async (node: JobSchedulerService, options: JobAcquireOptions) => {
      const lock = await node.acquire(options);
      if (!lock.acquired) throw new Error(`expected to acquire ${options.runKey}`);
      return lock;
    };

    it('lets exactly one of several independent nodes win, run after run', async () => {
      for (let attempt = 0; attempt < 10; attempt++) {
        const options = run();
        const results = await Promise.all(target.nodes.map((node) => node.acquire(options)));
        expect(results.filter((result) => result.acquired)).toHaveLength(1);
      }
    });

    it('refuses a held lease to everyone else', async () => {
      const options = run({ leaseMs: 60_000 });
      const holder = await acquired(target.nodes[0], options);
      for (const node of target.nodes) expect(await node.acquire(options)).toEqual({ acquired: false });
      expect(await target.nodes[0].complete(holder)).toBe(true);
    });

    it('locks again right after a release, 10 times in a row, on alternating nodes', async () => {
      const options = run();
      let previous = await acquired(target.nodes[0], options);
      for (let round = 1; round <= 10; round++) {
        expect(await target.nodes[(round - 1) % target.nodes.length].release(previous)).toBe(true);
        const next = await acquired(target.nodes[round % target.nodes.length], options);
        expect(next).toMatchObject({ id: previous.id, idempotencyKey: previous.idempotencyKey, attempt: round + 1, reclaimed: true });
        expect(next.fencingToken).toBeGreaterThan(previous.fencingToken);
        expect(next.ownerToken).not.toBe(previous.ownerToken);
        previous = next;
      }
      expect(await target.nodes[10 % target.nodes.length].complete(previous)).toBe(true);
      // Completed: never again, on any node.
      for (const node of target.nodes) expect(await node.acquire(options)).toEqual({ acquired: false });
    });

    it('reclaims a stale lease once its own lease has passed by the database clock', async () => {
      const options = run({ leaseMs: 60_000 });
      const holder = await acquired(target.nodes[0], options);
      await age(holder.id, 59_000);
      expect(await target.nodes[1].acquire(options)).toEqual({ acquired: false });
      await age(holder.id, 2_000);
      const results = await Promise.all(target.nodes.slice(1).map((node) => node.acquire(options)));
      const winners = results.filter((result) => result.acquired);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toMatchObject({ id: holder.id, idempotencyKey: holder.idempotencyKey, attempt: 2, reclaimed: true });
      expect(winners[0].acquired && winners[0].fencingToken).toBeGreaterThan(holder.fencingToken);
      expect((await rowOf(holder.id)).lastError).toMatchObject({ expired: true });
    });

    it('extends the lease with every heartbeat, many times', async () => {
      const options = run({ leaseMs: 60_000 });
      const holder = await acquired(target.nodes[0], options);
      // Each round the owner goes 50 s without a beat: two rounds without one would expire it.
      for (let round = 0; round < 25; round++) {
        await age(holder.id, 50_000);
        expect(await target.nodes[1].acquire(options)).toEqual({ acquired: false });
        expect(await target.nodes[0].heartbeat(holder)).toBe(true);
      }
      await age(holder.id, 50_000);
      await age(holder.id, 50_000);
      expect((await target.nodes[1].acquire(options)).acquired).toBe(true);
    });

    it('sends no heartbeat once the lease is lost', async () => {
      // Manual API: a former owner's heartbeat changes nothing.
      const options = run({ leaseMs: 60_000 });
      const old = await acquired(target.nodes[0], options);
      await age(old.id, 61_000);
      const current = await acquired(target.nodes[1], options);
      const before = await rowOf(old.id);
      expect(await target.nodes[0].heartbeat(old)).toBe(false);
      const after = await rowOf(old.id);
      expect(after.modifiedAt).toEqual(before.modifiedAt);
      expect(after.ownerToken).toBe(current.ownerToken);

      // runExclusive: the heartbeat that finds the loss is the last one sent.
      const heartbeats = () => target.counter.statements.filter((text) => /SET "modifiedAt" = CURRENT_TIMESTAMP\s+WHERE/.test(text)).length;
      let afterLoss = -1;
      const watched = run({ leaseMs: 3_000, heartbeatMs: 25 });
      const outcome = target.counted.runExclusive(watched, async ({ id, signal }) => {
        // A beat may land between the rigging and the takeover: rig again until the takeover wins.
        let stolen = false;
        for (let attempt = 0; attempt < 50 && !stolen; attempt++) {
          await age(id, 4_000);
          stolen = (await target.nodes[2].acquire({ ...watched, leaseMs: 60_000, heartbeatMs: 0 })).acquired;
        }
        expect(stolen).toBe(true);
        await aborted(signal);
        const atLoss = heartbeats();
        await sleep(400); // 16 heartbeat intervals
        afterLoss = heartbeats() - atLoss;
        return 'ignored its signal';
      });
      await expect(outcome).rejects.toBeInstanceOf(LostJobLeaseError);
      expect(afterLoss).toBe(0);
    });

    it('lets no former owner finalize after its token was rotated', async () => {
      const options = run({ leaseMs: 60_000 });
      const old = await acquired(target.nodes[0], options);
      await age(old.id, 61_000);
      const current = await acquired(target.nodes[1], options);
      expect(await target.nodes[0].complete(old, { by: 'old' })).toBe(false);
      expect(await target.nodes[0].fail(old, { by: 'old' })).toBe(false);
      expect(await target.nodes[0].release(old)).toBe(false);
      expect(await rowOf(old.id)).toMatchObject({ status: 'RUNNING', ownerToken: current.ownerToken, fencingToken: String(current.fencingToken), data: null });
      expect(await target.nodes[1].complete(current, { by: 'current' })).toBe(true);
      expect(await target.nodes[0].complete(old, { by: 'old' })).toBe(false);
      expect(await rowOf(old.id)).toMatchObject({ status: 'SUCCESS', data: { by: 'current' } });
    });

    it('handles records left from yesterday: stale RUNNING and FAIL are taken over, SUCCESS never', async () => {
      const rig = async (runKey: string, status: JobSchedulerStatus, leaseMs: number | null) => {
        const lockKey = buildLockKey(JobSchedulerType.SCHEDULE, 'contract-job', runKey);
        await target.sql(
          `INSERT INTO ${target.table} ("lockKey", "code", "type", "status", "ownerToken", "runKey", "leaseMs", "ownerId", "createdAt", "modifiedAt")
           VALUES ($1, 'contract-job', 'SCHEDULE', $2, gen_random_uuid(), $3, $4, 'gone-node',
                   CURRENT_TIMESTAMP - INTERVAL '1 day', CURRENT_TIMESTAMP - INTERVAL '1 day')`,
          [lockKey, status, runKey, leaseMs],
        );
        return lockKey;
      };
      const running = await rig(`yesterday-running-${++sequence}`, JobSchedulerStatus.RUNNING, 900_000);
      const legacy = await rig(`yesterday-legacy-${++sequence}`, JobSchedulerStatus.RUNNING, null);
      const failed = await rig(`yesterday-failed-${++sequence}`, JobSchedulerStatus.FAIL, 900_000);
      const done = await rig(`yesterday-done-${++sequence}`, JobSchedulerStatus.SUCCESS, 900_000);
      const runKeyOf = async (lockKey: string) =>
        (await target.sql<{ runKey: string }>(`SELECT "runKey" FROM ${target.table} WHERE "lockKey" = $1`, [lockKey]))[0].runKey;
      for (const lockKey of [running, legacy, failed]) {
        const [before] = await target.sql<{ fencingToken: string }>(`SELECT "fencingToken"::text FROM ${target.table} WHERE "lockKey" = $1`, [lockKey]);
        const lock = await target.nodes[0].acquire({ code: 'contract-job', runKey: await runKeyOf(lockKey) });
        expect(lock).toMatchObject({ acquired: true, idempotencyKey: lockKey, attempt: 2, reclaimed: true });
        expect(lock.acquired && lock.fencingToken).toBeGreaterThan(Number(before.fencingToken));
      }
      expect(await target.nodes[0].acquire({ code: 'contract-job', runKey: await runKeyOf(done) })).toEqual({ acquired: false });
    });

    it('refuses over-long identity fields before any SQL, and stores the longest allowed verbatim', async () => {
      target.counter.reset();
      const tooLong: unknown[] = [
        { code: 'c'.repeat(65), runKey: 'r' },
        { code: '😀'.repeat(65), runKey: 'r' },
        { code: 'c', runKey: 'r'.repeat(1_025) },
        { code: 'c', runKey: '𝄞'.repeat(1_025) },
        { code: 'c', runKey: 'r', name: 'n'.repeat(257) },
        { code: 'c', runKey: 'r', name: 'é'.repeat(257) },
      ];
      for (const options of tooLong) {
        await expect(target.counted.acquire(options as JobAcquireOptions)).rejects.toBeInstanceOf(InvalidJobIdentityOptionsError);
      }
      expect(target.counter.count).toBe(0);

      // Lengths are counted in code points, as varchar(n) counts them.
      const code = '😀'.repeat(64);
      const runKey = `${++sequence}-${'𝄞'.repeat(1_000)}`.padEnd(1_024, 'r');
      const name = 'é'.repeat(256);
      const lock = await acquired(target.counted, { code: `  ${code}  `, runKey, name });
      expect(await rowOf(lock.id)).toMatchObject({ code, runKey, name });
      expect(lock.idempotencyKey).toBe(buildLockKey(JobSchedulerType.SCHEDULE, code, runKey));
    });

    it('sends one statement per operation, none of which needs session state', async () => {
      target.counter.reset();
      const options = run({ heartbeatMs: 0 });
      const lock = await acquired(target.counted, options);
      await target.counted.acquire(options);
      await target.counted.heartbeat(lock);
      await target.counted.fail(lock, { step: 'fail' });
      const again = await acquired(target.counted, options);
      await target.counted.release(again);
      const last = await acquired(target.counted, options);
      await target.counted.complete(last, { step: 'complete' });
      await target.counted.heartbeat({ id: ZERO_UUID, ownerToken: ZERO_UUID });
      await target.counted.runExclusive(run({ heartbeatMs: 0 }), async () => 'done');
      expect(target.counter.count).toBe(11);
      expect(target.counter.statements.filter((text) => SESSION_STATE.test(text))).toEqual([]);
    });

    extra?.(() => target);

    if (configuration.transactionPooler) {
      it('sent no named prepared statement in the whole suite: a name would outlive its server session', () => {
        const calls = (driverQueries?.mock.calls ?? []) as unknown[][];
        expect(calls.length).toBeGreaterThan(100);
        const named = calls
          .map(([config]) => config)
          .filter((config) => typeof config === 'object' && config !== null && Boolean((config as { name?: unknown }).name));
        expect(named).toEqual([]);
      });
    }
  });
};
