import { type JobSchedulerService, LostJobLeaseError } from '../../src/features';
import { startLeaseNodes } from '../support/lease-nodes';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * The signal runExclusive hands its callback aborts whenever the lease is found lost, also when
 * finalization is what finds it: a paused owner (SIGSTOP past its lease) typically resumes with
 * its work timer and its heartbeat timer both overdue, finishes first, and learns of the loss
 * only from complete or fail. Whatever still listens to the signal must learn of it then.
 */
let database: TestDatabase;
let nodes: JobSchedulerService[];

beforeAll(async () => {
  database = await createTestDatabase();
  nodes = await startLeaseNodes(database, 2);
});

afterAll(async () => {
  await database.drop();
});

let sequence = 0;
const options = () => ({ code: 'signal-on-loss', runKey: `tick-${++sequence}`, heartbeatMs: 0 });

/** Another node takes the run over, as after the owner went quiet for a day. */
const takeOver = async (id: string, request: ReturnType<typeof options>) => {
  await database.sql(`UPDATE "job-scheduler" SET "modifiedAt" = "modifiedAt" - interval '1 day' WHERE id = $1`, [id]);
  const stolen = await nodes[1].acquire(request);
  if (!stolen.acquired) throw new Error('expected the other node to take the run over');
  return stolen;
};

const outcomeOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => 'resolved',
    (error: unknown) => error,
  );

describe('runExclusive signal on a lease lost at finalization', () => {
  it('aborts with the LostJobLeaseError it throws when complete finds the run taken over', async () => {
    const request = options();
    let signal: AbortSignal | undefined;
    const thrown = await outcomeOf(
      nodes[0].runExclusive(request, async (lease) => {
        signal = lease.signal;
        await takeOver(lease.id, request);
        expect(lease.signal.aborted).toBe(false);
        return 'finished after the takeover';
      }),
    );
    expect(thrown).toBeInstanceOf(LostJobLeaseError);
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(thrown);
  });

  it('aborts with the LostJobLeaseError it throws when fail finds the run taken over', async () => {
    const request = options();
    const failure = new Error('failed after the takeover');
    let signal: AbortSignal | undefined;
    const thrown = await outcomeOf(
      nodes[0].runExclusive(request, async (lease) => {
        signal = lease.signal;
        await takeOver(lease.id, request);
        throw failure;
      }),
    );
    expect(thrown).toBeInstanceOf(LostJobLeaseError);
    expect((thrown as Error).cause).toBe(failure);
    expect(signal?.reason).toBe(thrown);
  });

  it('tells listeners the callback left behind', async () => {
    const request = options();
    const heard: unknown[] = [];
    await outcomeOf(
      nodes[0].runExclusive(request, async (lease) => {
        lease.signal.addEventListener('abort', () => heard.push(lease.signal.reason), { once: true });
        await takeOver(lease.id, request);
      }),
    );
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeInstanceOf(LostJobLeaseError);
  });

  it('leaves the signal alone when the run completes or fails as the owner', async () => {
    const signals: AbortSignal[] = [];
    await nodes[0].runExclusive(options(), async ({ signal }) => {
      signals.push(signal);
    });
    await outcomeOf(
      nodes[0].runExclusive(options(), async ({ signal }) => {
        signals.push(signal);
        throw new Error('plain failure');
      }),
    );
    expect(signals.map((signal) => signal.aborted)).toEqual([false, false]);
  });
});
