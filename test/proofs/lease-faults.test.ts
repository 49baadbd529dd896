import { Logger, type LoggerService } from '@nestjs/common';
import { Client } from 'pg';
import type { DataSource, Logger as TypeOrmLogger } from 'typeorm';
import {
  InvalidJobCallbackError,
  InvalidJobLeaseError,
  JobLeaseDatabaseError,
  JobSchedulerService,
  type JobSchedulerModuleOptions,
  JobSchedulerStatus,
  LostJobLeaseError,
} from '../../src/features';
import { JobSchedulerExecutor } from '../../src/features/job-scheduler/job-scheduler.executor';
import { sleep } from '../support/lease-nodes';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, type TestDatabase } from '../support/test-database';
import { aborted } from '../support/abortable-work';

/**
 * The lease where PostgreSQL misbehaves, on a real server through real connections: a table lock
 * that hangs heartbeats, outages played by a TCP proxy (cut: connections dropped and refused;
 * mute: statements arrive and commit, their replies are lost), a table that was never migrated.
 * Timing claims are orderings and generous bounds, never tight sleeps.
 */
let database: TestDatabase;
let proxy: TcpProxy;
let proxiedUrl: string;
/** What the DataSources' loggers and Nest's Logger printed, to look for owner tokens. */
const printed: string[] = [];

const capture: TypeOrmLogger = {
  logQuery: (query, parameters) => void printed.push(`${query} ${JSON.stringify(parameters ?? [])}`),
  logQueryError: (error, query, parameters) => void printed.push(`${String(error)} ${query} ${JSON.stringify(parameters ?? [])}`),
  logQuerySlow: (time, query, parameters) => void printed.push(`${time} ${query} ${JSON.stringify(parameters ?? [])}`),
  logSchemaBuild: (message) => void printed.push(message),
  logMigration: (message) => void printed.push(message),
  log: (_level, message) => void printed.push(String(message)),
};
const nestCapture: LoggerService = {
  log: (message: unknown) => void printed.push(String(message)),
  warn: (message: unknown) => void printed.push(String(message)),
  error: (message: unknown, stack?: unknown) => void printed.push(`${String(message)} ${String(stack ?? '')}`),
  debug: (message: unknown) => void printed.push(String(message)),
  verbose: (message: unknown) => void printed.push(String(message)),
};

const nodeOn = async (url: string, options: JobSchedulerModuleOptions = {}, extra: { poolSize?: number; connectTimeoutMS?: number } = {}) => {
  const dataSource: DataSource = await database.dataSource({
    url,
    poolSize: extra.poolSize ?? 2,
    logging: 'all',
    logger: capture,
    ...(extra.connectTimeoutMS === undefined ? {} : { connectTimeoutMS: extra.connectTimeoutMS }),
  });
  return new JobSchedulerService(dataSource, options);
};

beforeAll(async () => {
  Logger.overrideLogger(nestCapture);
  database = await createTestDatabase();
  proxy = TcpProxy.forUrl(database.url);
  proxiedUrl = await proxy.start(database.url);
});

afterEach(() => {
  proxy.restore();
  proxy.unmute();
});

afterAll(async () => {
  Logger.overrideLogger(false);
  await proxy?.close();
  await database.drop();
});

let sequence = 0;
const request = (extra: Record<string, unknown> = {}) => ({ code: 'faults', runKey: `tick-${++sequence}`, ...extra });

const rowOf = async (id: string) =>
  (
    await database.sql<{ status: string; fencingToken: string; attempts: number; ownerToken: string }>(
      'SELECT status::text, "fencingToken"::text, attempts, "ownerToken"::text FROM "job-scheduler" WHERE id = $1',
      [id],
    )
  )[0];

const settle = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => error,
  );

/** Keeps acquiring until it wins; returns the instant (performance.now) it learned so. */
const acquireWhenFree = async (node: JobSchedulerService, options: ReturnType<typeof request>, untilMs: number) => {
  const stop = performance.now() + untilMs;
  while (performance.now() < stop) {
    try {
      const lock = await node.acquire(options);
      if (lock.acquired) return { lock, at: performance.now() };
    } catch {
      // The database is unreachable or locked for this node too: try again.
    }
    await sleep(50);
  }
  throw new Error('the other node never acquired the run');
};

const tokensSeen = new Set<string>();

describe('the local deadline', () => {
  it('aborts the holder at its deadline while a table lock hangs its heartbeat; another node only gets the run after', async () => {
    const holder = await nodeOn(database.url);
    const other = await nodeOn(database.url);
    const options = request({ leaseMs: 2_000, heartbeatMs: 400 });
    const lock = await holder.acquire(options);
    if (!lock.acquired) throw new Error('expected to acquire');
    tokensSeen.add(lock.ownerToken);
    const hold = holder.keepAlive(lock);
    await sleep(500); // one heartbeat lands
    expect(hold.heldUntil).toBeGreaterThan(lock.heldUntil);

    const locker = new Client({ connectionString: database.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE "job-scheduler" IN ACCESS EXCLUSIVE MODE'); // as a migration would
    const heldUntil = hold.heldUntil;
    const aborted = new Promise<number>((resolve) => hold.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }));
    const taken = acquireWhenFree(other, options, 20_000);
    const abortedAt = await aborted;
    await sleep(1_000);
    await locker.query('COMMIT');
    await locker.end();
    const { lock: stolen, at: takenAt } = await taken;

    expect(hold.signal.reason).toBeInstanceOf(LostJobLeaseError);
    expect((hold.signal.reason as Error).message).toMatch(/local deadline passed/);
    expect(abortedAt).toBeGreaterThanOrEqual(heldUntil - 5);
    expect(abortedAt).toBeLessThan(heldUntil + 1_500);
    expect(takenAt).toBeGreaterThan(abortedAt);
    expect(stolen).toMatchObject({ reclaimed: true, attempt: 2 });
    expect(stolen.acquired && stolen.fencingToken).toBeGreaterThan(lock.fencingToken);
    await hold.stop();
  });

  it('rides out a 3 s outage inside a 10 s lease: not aborted, one execution, SUCCESS, same fencing token, attempts 1', async () => {
    const behind = await nodeOn(proxiedUrl);
    const direct = await nodeOn(database.url);
    const options = request({ leaseMs: 10_000, heartbeatMs: 1_000 });
    let calls = 0;
    let leaseSeen: { id: string; fencingToken: number; signal: AbortSignal } | undefined;
    let otherDuringOutage: unknown;
    const outcome = await behind.runExclusive(options, async ({ id, ownerToken, fencingToken, signal }) => {
      calls++;
      tokensSeen.add(ownerToken);
      leaseSeen = { id, fencingToken, signal };
      proxy.cut();
      await sleep(1_000);
      otherDuringOutage = await direct.acquire(options);
      await sleep(2_000);
      proxy.restore();
      await sleep(2_500); // heartbeats resume
      return 'survived';
    });
    expect(outcome).toEqual({ acquired: true, result: 'survived' });
    expect(calls).toBe(1);
    expect(otherDuringOutage).toEqual({ acquired: false });
    expect(leaseSeen?.signal.aborted).toBe(false);
    const row = await rowOf(leaseSeen!.id);
    expect(row).toMatchObject({ status: 'SUCCESS', attempts: 1, fencingToken: String(leaseSeen!.fencingToken) });
  });

  it('aborts at the deadline when the outage outlasts the lease, and another node gets the run only after that', async () => {
    const behind = await nodeOn(proxiedUrl);
    const direct = await nodeOn(database.url);
    const options = request({ leaseMs: 5_000, heartbeatMs: 500 });
    let abortedAt = 0;
    let takenAt = 0;
    const thrown = await settle(
      behind.runExclusive(options, async ({ signal, ownerToken }) => {
        tokensSeen.add(ownerToken);
        proxy.cut();
        const taken = acquireWhenFree(direct, options, 30_000);
        await aborted(signal);
        abortedAt = performance.now();
        expect(signal.reason).toBeInstanceOf(LostJobLeaseError);
        takenAt = (await taken).at;
        proxy.restore();
        return 'too late';
      }),
    );
    expect(takenAt).toBeGreaterThan(abortedAt);
    // Its completion is fenced out: the other node owns the run now.
    expect(thrown).toBeInstanceOf(LostJobLeaseError);
  });
});

describe('finalization across an outage', () => {
  it('completes once the database is back: the result is returned and the callback ran once', async () => {
    const behind = await nodeOn(proxiedUrl);
    const options = request({ leaseMs: 10_000 });
    let calls = 0;
    let id = '';
    const outcome = await behind.runExclusive(options, async (lease) => {
      calls++;
      id = lease.id;
      tokensSeen.add(lease.ownerToken);
      proxy.cut();
      setTimeout(() => proxy.restore(), 1_500);
      return 'finished during the outage';
    });
    expect(outcome).toEqual({ acquired: true, result: 'finished during the outage' });
    expect(calls).toBe(1);
    expect((await rowOf(id)).status).toBe('SUCCESS');
  });

  it('counts a completion whose reply was lost as applied when the retry finds it done', async () => {
    // connectTimeoutMS, as the README asks: handshakes sent while muted are given up, not kept forever.
    const behind = await nodeOn(proxiedUrl, { statementTimeoutMs: 1_000 }, { connectTimeoutMS: 1_000 });
    const options = request({ leaseMs: 15_000, heartbeatMs: 0 });
    let id = '';
    let calls = 0;
    const outcome = await behind.runExclusive(options, async (lease) => {
      calls++;
      id = lease.id;
      tokensSeen.add(lease.ownerToken);
      proxy.mute(); // the complete statement will reach the server and commit; its reply will not come back
      setTimeout(() => proxy.unmute(), 2_500);
      return 'completed once';
    });
    expect(outcome).toEqual({ acquired: true, result: 'completed once' });
    expect(calls).toBe(1);
    expect((await rowOf(id)).status).toBe('SUCCESS');
  });

  it('fails a run across an outage, recording FAIL and rethrowing the callback error', async () => {
    const behind = await nodeOn(proxiedUrl);
    const options = request({ leaseMs: 10_000 });
    const failure = new Error('the work failed');
    let id = '';
    const thrown = await settle(
      behind.runExclusive(options, async (lease) => {
        id = lease.id;
        tokensSeen.add(lease.ownerToken);
        proxy.cut();
        setTimeout(() => proxy.restore(), 1_500);
        throw failure;
      }),
    );
    expect(thrown).toBe(failure);
    expect((await rowOf(id)).status).toBe('FAIL');
  });
});

describe('keepAlive for hand-acquired leases', () => {
  it('heartbeats, moves heldUntil forward, and completes', async () => {
    const node = await nodeOn(database.url);
    const lock = await node.acquire(request({ leaseMs: 4_000, heartbeatMs: 800 }));
    if (!lock.acquired) throw new Error('expected to acquire');
    tokensSeen.add(lock.ownerToken);
    expect(lock.heldUntil).toBeGreaterThan(performance.now());
    expect(lock.heldUntil).toBeLessThanOrEqual(performance.now() + 4_000 - 400);
    const hold = node.keepAlive(lock);
    await sleep(5_000); // longer than the lease: only heartbeats keep it
    expect(hold.signal.aborted).toBe(false);
    expect(hold.heldUntil).toBeGreaterThan(lock.heldUntil + 2_000);
    expect(await hold.complete({ rows: 42 })).toBe(true);
    expect((await rowOf(lock.id)).status).toBe('SUCCESS');
  });

  it('aborts with LostJobLeaseError once another owner took the run over', async () => {
    const [first, second] = [await nodeOn(database.url), await nodeOn(database.url)];
    const options = request({ leaseMs: 60_000, heartbeatMs: 200 });
    const lock = await first.acquire(options);
    if (!lock.acquired) throw new Error('expected to acquire');
    tokensSeen.add(lock.ownerToken);
    const hold = first.keepAlive(lock);
    // Its lease made to look expired; a heartbeat landing between that and the steal renews it
    // (a loaded machine can delay the steal past 200 ms), so the steal is tried a few times.
    let stolen = { acquired: false };
    for (let attempt = 0; attempt < 20 && !stolen.acquired; attempt++) {
      await database.sql(`UPDATE "job-scheduler" SET "modifiedAt" = "modifiedAt" - interval '1 day' WHERE id = $1`, [lock.id]);
      stolen = await second.acquire(options);
    }
    expect(stolen.acquired).toBe(true);
    await aborted(hold.signal);
    expect(hold.signal.reason).toBeInstanceOf(LostJobLeaseError);
    expect(await hold.complete()).toBe(false);
  });

  it('refuses what acquire did not return, before any SQL', async () => {
    const node = await nodeOn(database.url);
    expect(() => node.keepAlive({ id: 'x' } as never)).toThrow(InvalidJobLeaseError);
    expect(() =>
      node.keepAlive({
        id: '00000000-0000-4000-8000-000000000000',
        ownerToken: '00000000-0000-4000-8000-000000000000',
        leaseMs: 1_000,
        heartbeatMs: 0,
      } as never),
    ).toThrow(InvalidJobLeaseError);
  });
});

describe('fencing tokens', () => {
  it('never go back for a run, also after prune deleted its rows', async () => {
    const node = await nodeOn(database.url);
    const options = request({ leaseMs: 60_000 });
    const seen: number[] = [];
    for (let round = 0; round < 3; round++) {
      const lock = await node.acquire(options);
      if (!lock.acquired) throw new Error('expected to acquire');
      seen.push(lock.fencingToken);
      expect(await node.fail(lock, { round })).toBe(true);
    }
    await database.sql(
      `UPDATE "job-scheduler" SET "createdAt" = "createdAt" - interval '2 days', "modifiedAt" = "modifiedAt" - interval '2 days' WHERE code = 'faults'`,
    );
    expect(await node.prune({ olderThan: '1d', status: JobSchedulerStatus.FAIL })).toBeGreaterThan(0);
    const after = await node.acquire(options);
    if (!after.acquired) throw new Error('expected to acquire');
    seen.push(after.fencingToken);
    expect(after.attempt).toBe(1);
    for (let index = 1; index < seen.length; index++) expect(seen[index]).toBeGreaterThan(seen[index - 1]);
  });
});

describe('errors', () => {
  it('wrap database failures in JobLeaseDatabaseError: operation, SQLSTATE, retryable, a sanitized cause', async () => {
    const behind = await nodeOn(proxiedUrl, { statementTimeoutMs: 1_500 }, { connectTimeoutMS: 1_500 });
    const lock = await behind.acquire(request());
    if (!lock.acquired) throw new Error('expected to acquire');
    tokensSeen.add(lock.ownerToken);
    proxy.cut();
    const errors = [await settle(behind.heartbeat(lock)), await settle(behind.complete(lock, { a: 1 })), await settle(behind.acquire(request()))];
    for (const error of errors) {
      expect(error).toBeInstanceOf(JobLeaseDatabaseError);
      expect(error).toMatchObject({ retryable: true, code: 'JOB_LEASE_DATABASE' });
    }
    expect(errors.map((error) => (error as JobLeaseDatabaseError).operation)).toEqual(['heartbeat', 'complete', 'acquire']);
    proxy.restore();
    proxy.mute();
    const timedOut = await settle(behind.heartbeat(lock));
    expect(timedOut).toBeInstanceOf(JobLeaseDatabaseError);
    expect((timedOut as Error).message).toMatch(/within 1500 ms/);
    proxy.unmute();
    collected.push(...errors, timedOut);
  });

  it('redact the owner token where the server itself quotes it (message and detail)', async () => {
    const node = await nodeOn(database.url);
    const lock = await node.acquire(request({ code: 'faults-trigger' }));
    if (!lock.acquired) throw new Error('expected to acquire');
    tokensSeen.add(lock.ownerToken);
    await database.sql(`
      CREATE FUNCTION quote_token() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'refused %', NEW."ownerToken" USING DETAIL = 'token ' || NEW."ownerToken"::text, ERRCODE = '23514';
      END $$`);
    await database.sql(
      `CREATE TRIGGER quote_token BEFORE UPDATE ON "job-scheduler" FOR EACH ROW WHEN (NEW.code = 'faults-trigger') EXECUTE FUNCTION quote_token()`,
    );
    try {
      const error = await settle(node.heartbeat(lock));
      expect(error).toBeInstanceOf(JobLeaseDatabaseError);
      expect(error).toMatchObject({ sqlState: '23514', retryable: false });
      expect((error as Error).message).toContain('refused [redacted]');
      collected.push(error);
    } finally {
      await database.sql('DROP TRIGGER quote_token ON "job-scheduler"; DROP FUNCTION quote_token()');
    }
  });

  it('name the migrations when the table is missing, and run no callback', async () => {
    const bare = await createTestDatabase({ migrate: false });
    try {
      const node = new JobSchedulerService(await bare.dataSource({ poolSize: 1 }));
      const callback = jest.fn(async () => 'never');
      const thrown = await settle(node.runExclusive(request(), callback));
      expect(thrown).toBeInstanceOf(JobLeaseDatabaseError);
      expect(thrown).toMatchObject({ sqlState: '42P01', retryable: false, operation: 'acquire' });
      expect((thrown as Error).message).toMatch(/run the package's migrations .*JobSchedulerMigrations/);
      expect(callback).not.toHaveBeenCalled();
    } finally {
      await bare.drop();
    }
  });

  it('refuse a callback that is not a function before any SQL', async () => {
    const before = printed.length;
    const node = await nodeOn(database.url);
    const queriesBefore = printed.length;
    for (const callback of [undefined, null, 'run', { then: () => undefined }]) {
      await expect(node.runExclusive(request(), callback as never)).rejects.toBeInstanceOf(InvalidJobCallbackError);
    }
    expect(printed.length).toBe(queriesBefore);
    expect(queriesBefore).toBeGreaterThanOrEqual(before);
  });
});

describe('statements that wait on the server', () => {
  it('prove the lease from the instant acquire was sent, however late its answer comes', async () => {
    const node = await nodeOn(database.url);
    const locker = new Client({ connectionString: database.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE "job-scheduler" IN ACCESS EXCLUSIVE MODE');
    const sentBefore = performance.now();
    const pending = node.acquire(request({ leaseMs: 20_000 }));
    await sleep(1_500);
    await locker.query('COMMIT');
    await locker.end();
    const lock = await pending;
    if (!lock.acquired) throw new Error('expected to acquire');
    tokensSeen.add(lock.ownerToken);
    expect(performance.now() - sentBefore).toBeGreaterThan(1_400);
    // From the send (at or after sentBefore), never from the answer 1.5 s later.
    expect(lock.heldUntil).toBeGreaterThanOrEqual(sentBefore + 20_000 - 1_000);
    expect(lock.heldUntil).toBeLessThan(sentBefore + 20_000 - 1_000 + 500);
  });

  it('are cancelled on the server when they time out, instead of piling up behind a lock', async () => {
    const node = await nodeOn(database.url, { statementTimeoutMs: 400 }, { poolSize: 4 });
    const lock = await node.acquire(request({ leaseMs: 30_000, heartbeatMs: 400 }));
    if (!lock.acquired) throw new Error('expected to acquire');
    tokensSeen.add(lock.ownerToken);
    const hold = node.keepAlive(lock);
    const locker = new Client({ connectionString: database.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE "job-scheduler" IN ACCESS EXCLUSIVE MODE');
    const waiting: number[] = [];
    for (let sample = 0; sample < 8; sample++) {
      await sleep(500);
      const [row] = await database.sql<{ count: number }>(
        `SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      waiting.push(row.count);
    }
    await locker.query('COMMIT');
    await locker.end();
    // Each heartbeat timed out after 400 ms and was retried: without cancel requests every one of
    // them would still wait on the server (8+ by now); with them, at most the one in flight and
    // one whose cancel is on its way.
    expect(Math.max(...waiting)).toBeLessThanOrEqual(2);
    expect(hold.signal.aborted).toBe(false);
    expect(await hold.complete()).toBe(true);
  });

  it('count a retried completion as applied when it waited on the first attempt, which then committed', async () => {
    const node = await nodeOn(database.url);
    const lock = await node.acquire(request());
    if (!lock.acquired) throw new Error('expected to acquire');
    tokensSeen.add(lock.ownerToken);
    const executor = new JobSchedulerExecutor(await database.dataSource({ poolSize: 1 }));
    const first = new Client({ connectionString: database.url });
    await first.connect();
    const complete = executor.statements.complete(lock.id, lock.ownerToken, '{"attempt":1}');
    await first.query('BEGIN');
    expect((await first.query(complete.text, complete.values)).rowCount).toBe(1); // holds the row lock
    const retry = executor.rows(executor.statements.completeAgain(lock.id, lock.ownerToken, '{"attempt":2}'));
    await sleep(300);
    await first.query('COMMIT');
    await first.end();
    expect(await retry).toHaveLength(1);
    const [row] = await database.sql<{ status: string; data: unknown }>('SELECT status::text, data FROM "job-scheduler" WHERE id = $1', [lock.id]);
    expect(row).toEqual({ status: 'SUCCESS', data: { attempt: 1 } });
    // Another owner's token never counts.
    const other = executor.statements.completeAgain(lock.id, '00000000-0000-4000-8000-000000000000', null);
    expect(await executor.rows(other)).toHaveLength(0);
    expect(await executor.rows(executor.statements.failAgain(lock.id, lock.ownerToken, null))).toHaveLength(0);
  });
});

const collected: unknown[] = [];

/** Every text an error carries: message, stack, JSON, own properties, down its cause chain. */
const textsOf = (error: unknown, depth = 0): string[] => {
  if (depth > 8 || error === null || error === undefined) return [];
  if (typeof error !== 'object') return [String(error)];
  const texts = [JSON.stringify(error) ?? ''];
  for (const key of Object.getOwnPropertyNames(error)) {
    const value = (error as Record<string, unknown>)[key];
    if (key === 'cause') texts.push(...textsOf(value, depth + 1));
    else texts.push(typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value)));
  }
  return texts;
};

describe('owner tokens', () => {
  it('appear in no thrown error (message, stack, JSON, cause chain) and no log line of this file', () => {
    expect(tokensSeen.size).toBeGreaterThan(5);
    expect(collected.length).toBeGreaterThan(3);
    expect(printed.length).toBeGreaterThan(20);
    const texts = [...printed, ...collected.flatMap((error) => textsOf(error))];
    const leaks = texts.filter((text) => [...tokensSeen].some((token) => text.includes(token)));
    expect(leaks).toEqual([]);
    // The redaction is what keeps them out: the statements did carry them.
    expect(printed.some((line) => line.includes('[redacted]'))).toBe(true);
  });
});
