import { JobLeaseDatabaseError, type JobFinalizeOptions, type JobLease, type JobLeaseWithData } from '../../../src/features';
import { FINALIZE_STATEMENTS_IN_FLIGHT, withFinalizeBatching } from '../../../src/features/scheduling/fleet/finalize-batcher';
import { withHandOverBatching } from '../../../src/features/scheduling/fleet/hand-over-batcher';
import { withHeartbeatBatching } from '../../../src/features/scheduling/fleet/heartbeat-batcher';
import type { SchedulerLease } from '../../../src/features/scheduling/scheduler-ports';

/**
 * withFinalizeBatching, withHeartbeatBatching and withHandOverBatching on a port that records
 * what it is asked: heartbeats, completes, fails and hand-overs that come together share a
 * statement; a failed statement is never split per run, unless no retry can fix it.
 */
type Call = {
  kind: 'complete' | 'fail' | 'completeMany' | 'failMany' | 'heartbeat' | 'heartbeatMany' | 'expireMany';
  ids: string[];
  data: unknown[];
  again: boolean;
  timeoutMs?: number;
};

const portRecording = (failures: unknown[] = []) => {
  const calls: Call[] = [];
  const single = (kind: 'complete' | 'fail') => async (lease: JobLease, data?: unknown, options?: JobFinalizeOptions) => {
    calls.push({ kind, ids: [lease.id], data: [data], again: options?.again === true });
    return lease.id !== 'taken';
  };
  const many = (kind: 'completeMany' | 'failMany') => async (leases: readonly JobLeaseWithData[], _data?: unknown, options?: JobFinalizeOptions) => {
    calls.push({ kind, ids: leases.map((lease) => lease.id), data: leases.map((lease) => lease.data), again: options?.again === true });
    const failure = failures.shift();
    if (failure !== undefined) throw failure;
    return leases.map((lease) => lease.id !== 'taken');
  };
  const port: SchedulerLease = {
    acquire: async () => ({ acquired: false, status: null }) as never,
    acquireBatch: async () => [],
    heartbeat: async (lease, options) => {
      calls.push({ kind: 'heartbeat', ids: [lease.id], data: [], again: false, timeoutMs: options?.timeoutMs });
      return lease.id !== 'taken';
    },
    heartbeatMany: async (leases, options) => {
      calls.push({ kind: 'heartbeatMany', ids: leases.map((lease) => lease.id), data: [], again: false, timeoutMs: options?.timeoutMs });
      const failure = failures.shift();
      if (failure !== undefined) throw failure;
      return leases.map((lease) => lease.id !== 'taken');
    },
    expireMany: async (leases) => {
      calls.push({ kind: 'expireMany', ids: leases.map((lease) => lease.id), data: [], again: false });
      const failure = failures.shift();
      if (failure !== undefined) throw failure;
      return leases.map((lease) => lease.id !== 'taken');
    },
    complete: single('complete'),
    fail: single('fail'),
    completeMany: many('completeMany'),
    failMany: many('failMany'),
  };
  return { calls, lease: withHandOverBatching(withHeartbeatBatching(withFinalizeBatching(port))) };
};

const leaseOf = (id: string): JobLease => ({ id, ownerToken: `${id}-token` });
const transient = () => new JobLeaseDatabaseError('no pool connection within 5000 ms', { operation: 'fail', retryable: true });

describe('finalizations batched by withFinalizeBatching', () => {
  it('fails that come together share one failMany statement, each row with its own data, each caller told its own outcome', async () => {
    const { calls, lease } = portRecording();
    const outcomes = await Promise.all(['a', 'b', 'taken'].map((id) => lease.fail(leaseOf(id), { error: { message: `${id} broke` }, handlerMs: 3 })));
    expect(outcomes).toEqual([true, true, false]);
    expect(calls).toEqual([
      {
        kind: 'failMany',
        ids: ['a', 'b', 'taken'],
        data: ['a', 'b', 'taken'].map((id) => ({ error: { message: `${id} broke` }, handlerMs: 3 })),
        again: false,
      },
    ]);
  });

  it('completes and fails go in statements of their own; retries (`again`) in statements of their own too', async () => {
    const { calls, lease } = portRecording();
    await Promise.all([
      lease.complete(leaseOf('a'), { handlerMs: 1 }),
      lease.fail(leaseOf('b'), { handlerMs: 2 }),
      lease.complete(leaseOf('c'), { handlerMs: 3 }),
      lease.complete(leaseOf('d'), { handlerMs: 4 }, { again: true }),
      lease.complete(leaseOf('e'), { handlerMs: 5 }, { again: true }),
    ]);
    expect(calls.map(({ kind, ids, again }) => [kind, ids, again])).toEqual([
      ['completeMany', ['a', 'c'], false],
      ['completeMany', ['d', 'e'], true],
      ['fail', ['b'], false],
    ]);
  });

  it('a statement the database could not answer is sent again whole as a retry; when that fails too, each caller gets the error (its hold retries)', async () => {
    const once = portRecording([transient()]);
    expect(await Promise.all(['a', 'b'].map((id) => once.lease.fail(leaseOf(id), { id })))).toEqual([true, true]);
    expect(once.calls.map(({ kind, ids, again }) => [kind, ids, again])).toEqual([
      ['failMany', ['a', 'b'], false],
      ['failMany', ['a', 'b'], true],
    ]);

    const twice = portRecording([transient(), transient()]);
    const outcomes = await Promise.allSettled(['a', 'b'].map((id) => twice.lease.complete(leaseOf(id), { id })));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    expect((outcomes[0] as PromiseRejectedResult).reason).toBeInstanceOf(JobLeaseDatabaseError);
    // Never one statement per run.
    expect(twice.calls.map(({ kind }) => kind)).toEqual(['completeMany', 'completeMany']);
  });

  it('a statement that fails with an error no retry fixes sends each run alone, as a retry with its own data', async () => {
    const { calls, lease } = portRecording([new JobLeaseDatabaseError('invalid input syntax', { operation: 'complete', sqlState: '22P02', retryable: false })]);
    expect(await Promise.all(['a', 'b'].map((id) => lease.complete(leaseOf(id), { id })))).toEqual([true, true]);
    expect(calls).toEqual([
      { kind: 'completeMany', ids: ['a', 'b'], data: [{ id: 'a' }, { id: 'b' }], again: false },
      { kind: 'complete', ids: ['a'], data: [{ id: 'a' }], again: true },
      { kind: 'complete', ids: ['b'], data: [{ id: 'b' }], again: true },
    ]);
  });
});

describe('finalize statements in flight', () => {
  it(`are at most ${FINALIZE_STATEMENTS_IN_FLIGHT} at once; the runs that end meanwhile join the next statement, whatever their number`, async () => {
    const answers: Array<() => void> = [];
    const statements: string[][] = [];
    const port: SchedulerLease = {
      acquire: async () => ({ acquired: false, status: null }) as never,
      acquireBatch: async () => [],
      heartbeat: async () => true,
      complete: async () => true,
      fail: async () => true,
      completeMany: (leases) => {
        statements.push(leases.map((value) => value.id));
        return new Promise((resolve) => answers.push(() => resolve(leases.map(() => true))));
      },
    };
    const lease = withFinalizeBatching(port);
    const settle = () => new Promise((resolve) => setTimeout(resolve, 20));
    const done: Promise<boolean>[] = [];
    // Four waves of runs ending 20 ms apart, while no statement answers.
    for (const wave of ['a', 'b', 'c', 'd']) {
      for (let index = 0; index < 3; index++) done.push(lease.complete(leaseOf(`${wave}${index}`)));
      await settle();
    }
    expect(statements).toEqual([
      ['a0', 'a1', 'a2'],
      ['b0', 'b1', 'b2'],
    ]);
    answers.shift()!();
    await settle();
    // The waves that came meanwhile went out together, once a statement was answered.
    expect(statements[2]).toEqual(['c0', 'c1', 'c2', 'd0', 'd1', 'd2']);
    for (const answer of answers.splice(0)) answer();
    expect(await Promise.all(done)).toEqual(done.map(() => true));
  });
});

describe('heartbeats batched by withHeartbeatBatching', () => {
  it('heartbeats that come together share one heartbeatMany statement, bounded by the tightest timeout; each hold told whether it still holds its lease', async () => {
    const { calls, lease } = portRecording();
    const held = await Promise.all([
      lease.heartbeat(leaseOf('a'), { timeoutMs: 3_000 }),
      lease.heartbeat(leaseOf('taken'), { timeoutMs: 1_200 }),
      lease.heartbeat(leaseOf('c')),
    ]);
    expect(held).toEqual([true, false, true]);
    expect(calls).toEqual([{ kind: 'heartbeatMany', ids: ['a', 'taken', 'c'], data: [], again: false, timeoutMs: 1_200 }]);
  });

  it('a statement the database could not answer tells each hold the error (each retries as its own heartbeat would); another error sends each alone', async () => {
    const transientFailure = portRecording([transient()]);
    const outcomes = await Promise.allSettled(['a', 'b'].map((id) => transientFailure.lease.heartbeat(leaseOf(id), { timeoutMs: 1_000 })));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    expect(transientFailure.calls.map(({ kind }) => kind)).toEqual(['heartbeatMany']);

    const invalid = portRecording([new JobLeaseDatabaseError('invalid input syntax', { operation: 'heartbeat', sqlState: '22P02', retryable: false })]);
    expect(await Promise.all(['a', 'b'].map((id) => invalid.lease.heartbeat(leaseOf(id), { timeoutMs: 1_000 })))).toEqual([true, true]);
    expect(invalid.calls.map(({ kind, ids, timeoutMs }) => [kind, ids, timeoutMs])).toEqual([
      ['heartbeatMany', ['a', 'b'], 1_000],
      ['heartbeat', ['a'], 1_000],
      ['heartbeat', ['b'], 1_000],
    ]);
  });

  it('a heartbeat alone in its moment is sent as it is', async () => {
    const { calls, lease } = portRecording();
    expect(await lease.heartbeat(leaseOf('a'), { timeoutMs: 500 })).toBe(true);
    expect(calls).toEqual([{ kind: 'heartbeat', ids: ['a'], data: [], again: false, timeoutMs: 500 }]);
  });
});

describe('hand-overs batched by withHandOverBatching', () => {
  it('hand-overs that come together share one expireMany statement; each caller told, per lease, whether it was its own', async () => {
    const { calls, lease } = portRecording();
    const handed = await Promise.all([lease.expireMany!([leaseOf('a')]), lease.expireMany!([leaseOf('taken'), leaseOf('c')]), lease.expireMany!([])]);
    expect(handed).toEqual([[true], [false, true], []]);
    expect(calls).toEqual([{ kind: 'expireMany', ids: ['a', 'taken', 'c'], data: [], again: false }]);
  });

  it('a statement the database could not answer tells each caller the error (the leases run out by themselves); another error sends each caller alone', async () => {
    const transientFailure = portRecording([transient()]);
    const outcomes = await Promise.allSettled(['a', 'b'].map((id) => transientFailure.lease.expireMany!([leaseOf(id)])));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    expect(transientFailure.calls.map(({ kind }) => kind)).toEqual(['expireMany']);

    const invalid = portRecording([new JobLeaseDatabaseError('invalid input syntax', { operation: 'release', sqlState: '22P02', retryable: false })]);
    expect(await Promise.all([invalid.lease.expireMany!([leaseOf('a')]), invalid.lease.expireMany!([leaseOf('b'), leaseOf('taken')])])).toEqual([
      [true],
      [true, false],
    ]);
    expect(invalid.calls.map(({ kind, ids }) => [kind, ids])).toEqual([
      ['expireMany', ['a', 'b', 'taken']],
      ['expireMany', ['a']],
      ['expireMany', ['b', 'taken']],
    ]);
  });
});
