import { InvalidJobIdentityOptionsError, InvalidJobLeaseOptionsError, JobSchedulerService, LostJobLeaseError } from '../../src/features';
import { sleep } from '../support/lease-nodes';
import { type NestNode, startNestNode } from '../support/nest-node';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, type TestDatabase } from '../support/test-database';
import { aborted } from '../support/abortable-work';

/**
 * The database going away under a running Nest application (a TCP proxy that drops every
 * connection and refuses new ones): the caller gets the driver's error, the application stays up,
 * and everything works again once the database answers. A real server restart, with processes
 * SIGKILLed and SIGSTOPped around it, is in the chaos run (chaos.test.ts, npm run chaos).
 */
let database: TestDatabase;
let proxy: TcpProxy;
let node: NestNode;
let direct: JobSchedulerService;

beforeAll(async () => {
  database = await createTestDatabase();
  proxy = TcpProxy.forUrl(database.url);
  const url = await proxy.start(database.url);
  node = await startNestNode(url, { jobScheduler: { nodeId: 'behind-proxy' }, typeorm: { poolSize: 3 } });
  direct = new JobSchedulerService(await database.dataSource({ poolSize: 2 }));
});

afterEach(() => proxy.restore());

afterAll(async () => {
  await node?.close();
  await proxy?.close();
  await database.drop();
});

let sequence = 0;
const options = (extra: Record<string, unknown> = {}) => ({ code: 'outage', runKey: `tick-${++sequence}`, ...extra });

const thrownBy = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => 'resolved',
    (error: unknown) => error,
  );

/** The driver's error, passed through: never one of the lease's own errors, never "not acquired". */
const expectDriverError = (error: unknown): void => {
  expect(error).toBeInstanceOf(Error);
  for (const typed of [LostJobLeaseError, InvalidJobIdentityOptionsError, InvalidJobLeaseOptionsError]) expect(error).not.toBeInstanceOf(typed);
};

describe('database down', () => {
  it('at acquire: the driver error is thrown, the callback never runs, and the application keeps working', async () => {
    expect((await node.jobs.acquire(options())).acquired).toBe(true); // the pool holds live connections
    proxy.cut();
    expectDriverError(await thrownBy(node.jobs.acquire(options())));
    const callback = jest.fn(async () => 'never');
    expectDriverError(await thrownBy(node.jobs.runExclusive(options(), callback)));
    expect(callback).not.toHaveBeenCalled();
    proxy.restore();
    const request = options();
    expect(await node.jobs.runExclusive(request, async () => 'after the outage')).toEqual({ acquired: true, result: 'after the outage' });
    expect(await direct.acquire(request)).toEqual({ acquired: false });
  });

  it('while connections sit idle in the pool: nothing crashes, the next statements reconnect', async () => {
    await Promise.all([0, 1, 2].map(() => node.jobs.acquire(options())));
    proxy.cut(); // every pooled connection dies while idle
    await sleep(50);
    proxy.restore();
    // The pool may still hand out a connection it has not yet seen die: the caller is told.
    const outcomes = [];
    for (let attempt = 0; attempt < 5; attempt++) outcomes.push(await thrownBy(node.jobs.acquire(options())));
    expect(outcomes.at(-1)).toBe('resolved');
  });

  it('during a heartbeat: the signal aborts with LostJobLeaseError (cause: the driver error); the run is taken over once the lease passes', async () => {
    const request = options({ leaseMs: 1_500, heartbeatMs: 50 });
    let reason: unknown;
    let leaseId = '';
    const outcome = thrownBy(
      node.jobs.runExclusive(request, async ({ id, signal }) => {
        leaseId = id;
        proxy.cut();
        await aborted(signal);
        reason = signal.reason;
        return 'stopped';
      }),
    );
    // complete cannot reach the database either: runExclusive throws the driver's error.
    expectDriverError(await outcome);
    expect(reason).toBeInstanceOf(LostJobLeaseError);
    expectDriverError((reason as Error).cause);
    proxy.restore();

    // The row is still RUNNING under the cut-off owner; once its lease passes (by the database
    // clock), any node takes it over, with the same idempotency key.
    expect(await direct.acquire(request)).toEqual({ acquired: false });
    await database.sql(`UPDATE "job-scheduler" SET "modifiedAt" = "modifiedAt" - interval '2 seconds' WHERE id = $1`, [leaseId]);
    expect(await direct.acquire(request)).toMatchObject({ acquired: true, id: leaseId, attempt: 2, reclaimed: true });
    // And the node that lost it works again on its own.
    expect(await node.jobs.runExclusive(options(), async () => 'recovered')).toEqual({ acquired: true, result: 'recovered' });
  });
});
