import { InvalidJobLeaseOptionsError, JobSchedulerService, JobSchedulerStatus, LostJobLeaseError } from '../../src/features';
import { Client } from 'pg';
import { sleep, startLeaseNodes } from '../support/lease-nodes';
import { startNestNode } from '../support/nest-node';
import { captureNestLogs } from '../support/nest-log-capture';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, type TestDatabase } from '../support/test-database';
import { aborted } from '../support/abortable-work';

let database: TestDatabase;
let nodes: JobSchedulerService[];

beforeAll(async () => {
  database = await createTestDatabase();
  nodes = await startLeaseNodes(database, 4);
});

afterAll(async () => {
  await database.drop();
});

let sequence = 0;
const options = (extra: Record<string, unknown> = {}) => ({ code: 'nightly-export', runKey: `tick-${++sequence}`, ...extra });

const rowByKey = async (idempotencyKey: string) => {
  const [row] = await database.sql<{ id: string; status: JobSchedulerStatus; data: unknown; attempts: number }>(
    'SELECT * FROM "job-scheduler" WHERE "lockKey" = $1',
    [idempotencyKey],
  );
  return row;
};

/** Makes the row look abandoned (no heartbeat for longer than any lease) so another node may reclaim it. */
const abandon = (id: string) => database.sql(`UPDATE "job-scheduler" SET "modifiedAt" = "modifiedAt" - interval '1 day' WHERE id = $1`, [id]);

describe('runExclusive', () => {
  it('runs the callback on the winner only and records SUCCESS', async () => {
    const request = options();
    const calls: string[] = [];
    const outcomes = await Promise.all(
      nodes.map((node, index) =>
        node.runExclusive(request, async (lease) => {
          calls.push(`node-${index}`);
          expect(lease.idempotencyKey).toMatch(/^v2:/);
          expect(lease.fencingToken).toBeGreaterThan(0);
          expect(lease.signal.aborted).toBe(false);
          await sleep(50);
          return { exported: 3 };
        }),
      ),
    );
    expect(calls).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome.acquired)).toEqual([{ acquired: true, result: { exported: 3 } }]);
    expect(outcomes.filter((outcome) => !outcome.acquired)).toEqual([{ acquired: false }, { acquired: false }, { acquired: false }]);
  });

  it('hands the same idempotency key to every attempt of a logical run', async () => {
    const request = options();
    const keys: string[] = [];
    await expect(
      nodes[0].runExclusive(request, async ({ idempotencyKey }) => {
        keys.push(idempotencyKey);
        throw new Error('first attempt fails');
      }),
    ).rejects.toThrow('first attempt fails');
    await nodes[1].runExclusive(request, async ({ idempotencyKey, fencingToken, attempt }) => {
      keys.push(idempotencyKey);
      expect(attempt).toBe(2);
      expect(fencingToken).toBeGreaterThan(1);
    });
    expect(keys[0]).toBe(keys[1]);
    expect((await rowByKey(keys[0])).status).toBe('SUCCESS');
  });

  it('records FAIL with the error name and message and rethrows the same error', async () => {
    const request = options();
    const error = new RangeError('ERP answered 503');
    let key = '';
    const thrown = await nodes[0]
      .runExclusive(request, async (lease) => {
        key = lease.idempotencyKey;
        throw error;
      })
      .catch((caught: unknown) => caught);
    expect(thrown).toBe(error);
    expect(await rowByKey(key)).toMatchObject({ status: 'FAIL', data: { error: { name: 'RangeError', message: 'ERP answered 503' } } });
  });

  it('does not call the callback of a loser', async () => {
    const request = options();
    const lock = await nodes[0].acquire(request);
    expect(lock.acquired).toBe(true);
    const fn = jest.fn(async () => 'never');
    expect(await nodes[1].runExclusive(request, fn)).toEqual({ acquired: false });
    expect(fn).not.toHaveBeenCalled();
  });

  it('keeps a long callback alive with heartbeats', async () => {
    const request = options({ leaseMs: 300, heartbeatMs: 50 });
    let contenderWins = 0;
    let attempts = 0;
    const outcome = await nodes[0].runExclusive(request, async ({ signal, idempotencyKey }) => {
      // Another node tries all along a callback that lasts five leases.
      const until = Date.now() + 1_500;
      while (Date.now() < until) {
        attempts++;
        if ((await nodes[1].acquire(request)).acquired) contenderWins++;
        await sleep(40);
      }
      expect(signal.aborted).toBe(false);
      return idempotencyKey;
    });
    expect(attempts).toBeGreaterThan(10);
    expect(contenderWins).toBe(0);
    expect(outcome.acquired).toBe(true);
    expect(await rowByKey(outcome.result as string)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
  });

  it('aborts the signal and throws LostJobLeaseError when the lease is taken over', async () => {
    const request = options({ leaseMs: 2_000, heartbeatMs: 100 });
    let reason: unknown;
    const thief: { id?: string; ownerToken?: string } = {};
    const outcome = nodes[0].runExclusive(request, async ({ id, signal }) => {
      // A heartbeat may land between the rigging and the takeover: rig again until the takeover wins.
      let stolen: Awaited<ReturnType<JobSchedulerService['acquire']>> = { acquired: false };
      for (let attempt = 0; attempt < 50 && !stolen.acquired; attempt++) {
        await abandon(id);
        stolen = await nodes[1].acquire(request);
      }
      if (!stolen.acquired) throw new Error('expected the thief to reclaim');
      Object.assign(thief, stolen);
      await aborted(signal);
      reason = signal.reason;
      return 'finished anyway';
    });
    await expect(outcome).rejects.toBeInstanceOf(LostJobLeaseError);
    expect(reason).toBeInstanceOf(LostJobLeaseError);
    // The paused owner wrote nothing: the thief still owns the run and can complete it.
    expect(await nodes[1].complete(thief as { id: string; ownerToken: string })).toBe(true);
  });

  it('throws LostJobLeaseError when the callback succeeds but the run was taken over meanwhile', async () => {
    const request = options({ heartbeatMs: 0 });
    await expect(
      nodes[0].runExclusive(request, async ({ id }) => {
        await abandon(id);
        expect((await nodes[1].acquire(request)).acquired).toBe(true);
        return 'done';
      }),
    ).rejects.toBeInstanceOf(LostJobLeaseError);
  });

  it('throws LostJobLeaseError (with the cause) when the callback fails after a takeover', async () => {
    const request = options({ heartbeatMs: 0 });
    const error = new Error('late failure');
    const thrown = await nodes[0]
      .runExclusive(request, async ({ id }) => {
        await abandon(id);
        await nodes[1].acquire(request);
        throw error;
      })
      .catch((caught: unknown) => caught);
    expect(thrown).toBeInstanceOf(LostJobLeaseError);
    expect((thrown as Error).cause).toBe(error);
  });

  it('still throws the callback error, with the recording failure as its cause, when FAIL cannot be written', async () => {
    const dataSource = await database.dataSource({ poolSize: 1 });
    const node = new JobSchedulerService(dataSource);
    const error = new Error('callback failed');
    await captureNestLogs(async (logs) => {
      const thrown = await node
        .runExclusive(options({ heartbeatMs: 0 }), async () => {
          await dataSource.destroy();
          throw error;
        })
        .catch((caught: unknown) => caught);
      expect(thrown).toBe(error);
      expect((thrown as Error).cause).toBeInstanceOf(Error);
      expect(logs.filter((line) => line.level === 'error').map((line) => line.message)).toEqual([
        expect.stringMatching(/^Could not record FAIL for job lease .*: JobLeaseDatabaseError: Job lease fail failed: the DataSource is not initialized/),
      ]);
    });
  });

  it('aborts with LostJobLeaseError when a heartbeat cannot reach the database, and works again once it can', async () => {
    const proxy = TcpProxy.forUrl(database.url);
    const node = new JobSchedulerService(await database.dataSource({ url: await proxy.start(database.url), poolSize: 1 }));
    try {
      await captureNestLogs(async (logs) => {
        const request = options({ leaseMs: 3_000, heartbeatMs: 50 });
        let reason: unknown;
        const outcome = node.runExclusive(request, async ({ signal }) => {
          proxy.cut();
          await aborted(signal);
          reason = signal.reason;
          return 'stopped';
        });
        // complete cannot reach the database either: the caller sees that error.
        await expect(outcome).rejects.toThrow(Error);
        expect(reason).toBeInstanceOf(LostJobLeaseError);
        expect((reason as Error).cause).toBeInstanceOf(Error);
        proxy.restore();
        expect(await node.runExclusive(options(), async () => 'after the outage')).toEqual({
          acquired: true,
          result: 'after the outage',
        });
        // Each retried statement says so once (WARN), the following attempts at debug level.
        expect(logs.some((line) => line.level === 'warn' && /^Retrying heartbeat of job lease .* \(attempt 2\)/.test(line.message))).toBe(true);
      });
    } finally {
      await proxy.close();
    }
  });
});

describe('runAcquired', () => {
  it('runs the callback under a lease acquired beforehand (a run of acquireBatch) and records SUCCESS, or FAIL with the error', async () => {
    const [done, failed] = await nodes[0].acquireBatch({ code: 'nightly-export', runKeys: [`tick-${++sequence}`, `tick-${++sequence}`] });
    if (!done.acquired || !failed.acquired) throw new Error('not acquired');
    expect(
      await nodes[0].runAcquired(done, async (lease) => ({ key: lease.idempotencyKey, token: lease.fencingToken, aborted: lease.signal.aborted })),
    ).toEqual({
      key: done.idempotencyKey,
      token: done.fencingToken,
      aborted: false,
    });
    expect(await rowByKey(done.idempotencyKey)).toMatchObject({ status: JobSchedulerStatus.SUCCESS });
    const error = new Error('export refused');
    await expect(nodes[0].runAcquired(failed, async () => Promise.reject(error))).rejects.toBe(error);
    expect(await rowByKey(failed.idempotencyKey)).toMatchObject({ status: JobSchedulerStatus.FAIL, data: { error: { message: 'export refused' } } });
  });

  it('with recordHandlerMs, records how long the callback ran beside SUCCESS or the error; without it, the 1.x data', async () => {
    const [slow, failing, plain] = await nodes[0].acquireBatch({ code: 'nightly-export', runKeys: [1, 2, 3].map(() => `tick-${++sequence}`) });
    if (!slow.acquired || !failing.acquired || !plain.acquired) throw new Error('not acquired');
    const started = performance.now();
    await nodes[0].runAcquired(slow, () => sleep(250), { recordHandlerMs: true });
    const elapsed = performance.now() - started;
    const { data } = await rowByKey(slow.idempotencyKey);
    expect(data).toEqual({ handlerMs: expect.any(Number) });
    const { handlerMs } = data as { handlerMs: number };
    expect(Number.isInteger(handlerMs)).toBe(true);
    expect(handlerMs).toBeGreaterThanOrEqual(240);
    expect(handlerMs).toBeLessThanOrEqual(Math.ceil(elapsed));
    await expect(nodes[0].runAcquired(failing, () => Promise.reject(new Error('late')), { recordHandlerMs: true })).rejects.toThrow('late');
    expect((await rowByKey(failing.idempotencyKey)).data).toEqual({ error: { name: 'Error', message: 'late' }, handlerMs: expect.any(Number) });
    await nodes[0].runAcquired(plain, async () => undefined, { recordHandlerMs: false });
    expect((await rowByKey(plain.idempotencyKey)).data).toBeNull();
  });

  it('refuses options other than { recordHandlerMs?: boolean } before any SQL, leaving the lease held', async () => {
    const [lock] = await nodes[0].acquireBatch({ code: 'nightly-export', runKeys: [`tick-${++sequence}`] });
    if (!lock.acquired) throw new Error('not acquired');
    for (const bad of [null, 'yes', { recordHandlerMs: 'true' }, { recordHandlerMs: true, extra: 1 }]) {
      let called = false;
      await expect(
        nodes[0].runAcquired(
          lock,
          async () => {
            called = true;
          },
          bad as never,
        ),
      ).rejects.toBeInstanceOf(InvalidJobLeaseOptionsError);
      expect(called).toBe(false);
    }
    expect(await rowByKey(lock.idempotencyKey)).toMatchObject({ status: JobSchedulerStatus.RUNNING });
  });

  it('throws LostJobLeaseError when the run was taken over before it completed', async () => {
    const [lock] = await nodes[0].acquireBatch({ code: 'nightly-export', runKeys: [`tick-${++sequence}`] });
    if (!lock.acquired) throw new Error('not acquired');
    await expect(
      nodes[0].runAcquired(lock, async () => {
        await abandon(lock.id);
        expect((await nodes[1].acquire({ code: 'nightly-export', runKey: `tick-${sequence}` })).acquired).toBe(true);
      }),
    ).rejects.toBeInstanceOf(LostJobLeaseError);
  });
});

describe('runExclusive on shutdown', () => {
  it('a run whose acquire is in flight as app.close() begins is told to stop and finalized before the DataSource closes (never left RUNNING)', async () => {
    const node = await startNestNode(database.url);
    // A held table lock (as a migration would hold it) keeps the acquire in flight.
    const locker = new Client({ connectionString: database.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE "job-scheduler" IN ACCESS EXCLUSIVE MODE');
    const request = options();
    let toldToStop: boolean | undefined;
    const outcome = node.jobs.runExclusive(request, async ({ signal, idempotencyKey }) => {
      await sleep(100);
      toldToStop = signal.aborted;
      return idempotencyKey;
    });
    await sleep(200);
    const closed = node.close();
    await sleep(200);
    await locker.query('COMMIT');
    await locker.end();
    const settled = await outcome.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await closed;
    expect(toldToStop).toBe(true);
    expect(settled).toEqual({ value: { acquired: true, result: expect.any(String) } });
    const row = await rowByKey((settled as { value: { result: string } }).value.result);
    expect(row.status).toBe(JobSchedulerStatus.SUCCESS);
  });
});
