import { createHash } from 'node:crypto';
import fc from 'fast-check';
import {
  InvalidJobDataError,
  InvalidJobIdentityOptionsError,
  InvalidJobLeaseOptionsError,
  type JobAcquireOptions,
  type JobAcquireResult,
  type JobLease,
  JobSchedulerService,
} from '../../src/features';
import type { DataSource } from 'typeorm';
import { StatementCounter } from '../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

interface Row {
  id: string;
  lockKey: string;
  code: string;
  runKey: string | null;
  name: string | null;
  status: string;
  ownerToken: string;
  data: unknown;
}

let database: TestDatabase;
/** A pooled connection for the many look-ups of the property test. */
let inspector: DataSource;
let counter: StatementCounter;
let counted: JobSchedulerService;
let other: JobSchedulerService;

beforeAll(async () => {
  database = await createTestDatabase();
  counter = new StatementCounter();
  counted = new JobSchedulerService(await database.dataSource({ logger: counter, logging: true, poolSize: 2 }));
  other = new JobSchedulerService(await database.dataSource({ poolSize: 2 }));
  inspector = await database.dataSource({ poolSize: 1 });
});

afterAll(async () => {
  await database.drop();
});

const rowById = async (id: string): Promise<Row> => {
  const [row] = await database.sql<Row>('SELECT * FROM "job-scheduler" WHERE "id" = $1', [id]);
  return row;
};

/** The v2 key, computed here independently of the implementation. */
const referenceKey = (type: string, code: string, runKey: string | null): string =>
  `v2:${createHash('sha256')
    .update(Buffer.from(`{"version":2,"type":${JSON.stringify(type)},"code":${JSON.stringify(code)},"runKey":${JSON.stringify(runKey)}}`, 'utf8'))
    .digest('base64url')}`;

const own = (options: object, key: string): unknown =>
  Object.prototype.hasOwnProperty.call(options, key) ? (options as Record<string, unknown>)[key] : undefined;

/** What an acquire did: a result, or what it threw. Never a rejection left unobserved. */
const settle = (promise: Promise<JobAcquireResult>): Promise<{ result: JobAcquireResult } | { error: unknown }> =>
  promise.then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );

let sequence = 0;
const freshLease = async (): Promise<JobLease & { idempotencyKey: string }> => {
  const lock = await other.acquire({ code: 'hostile-data', runKey: `run-${++sequence}` });
  if (!lock.acquired) throw new Error('expected to acquire');
  return lock;
};

describe('every field of JobAcquireOptions, any value (fast-check)', () => {
  const unitChars = fc.constantFrom(
    '\u0000',
    '\uD800',
    '\uDBFF',
    '\uDC00',
    '\uDFFF',
    ' ',
    '\t',
    '\n',
    'a',
    'Z',
    '😀',
    '𝄞',
    "'",
    '"',
    '\\',
    '$1',
    ';',
    '\u200B',
    '\uFEFF',
  );
  const anyString = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 80 }),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.string({ unit: unitChars, maxLength: 30 }),
    fc.string({ unit: 'binary-ascii', minLength: 60, maxLength: 70 }),
    fc.string({ unit: 'grapheme-ascii', minLength: 1_000, maxLength: 1_100 }),
    fc.string({ unit: 'grapheme-composite', minLength: 250, maxLength: 260 }),
    fc.constantFrom('', ' ', '   ', '\n\t', 'SCHEDULE', 'INITIAL', '__proto__', 'constructor'),
  );
  const anyNumber = fc.oneof(
    fc.integer(),
    fc.integer({ min: 3, max: 2 ** 31 - 1 }),
    fc.double(),
    fc.constantFrom(
      0,
      -0,
      1,
      2,
      3,
      1.5,
      NaN,
      Infinity,
      -Infinity,
      2 ** 31 - 1,
      2 ** 31,
      Number.MAX_SAFE_INTEGER,
      Number.MAX_SAFE_INTEGER + 1,
      Number.MIN_VALUE,
      1e21,
    ),
  );
  const wrongType = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.bigInt(),
    fc.constant(Symbol('hostile')),
    fc.constant(() => 'sync-orders'),
    fc.array(fc.string(), { maxLength: 2 }),
    fc.object({ maxDepth: 1 }),
    fc.date(),
    fc.constant(Object('boxed') as object),
    fc.constant(Object.create(null) as object),
    fc.constant({ toString: () => 'sync-orders', valueOf: () => 60_000 }),
  );
  const hostileKeys = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', 'then'),
  );

  /** Defines every property as an own one, `__proto__` included (plain assignment would set the prototype). */
  const withOwn = (entries: Array<[string, unknown]>, prototype: object | null = Object.prototype): object => {
    const target = Object.create(prototype) as object;
    for (const [key, value] of entries) Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
    return target;
  };

  const fields = {
    code: fc.oneof({ weight: 4, arbitrary: anyString }, { weight: 1, arbitrary: fc.oneof(wrongType, anyNumber) }),
    runKey: fc.oneof({ weight: 4, arbitrary: anyString }, { weight: 1, arbitrary: fc.oneof(wrongType, anyNumber) }),
    name: fc.oneof({ weight: 3, arbitrary: anyString }, { weight: 1, arbitrary: wrongType }),
    type: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('SCHEDULE', 'INITIAL', undefined) }, { weight: 1, arbitrary: fc.oneof(anyString, wrongType) }),
    leaseMs: fc.oneof(anyNumber, wrongType, anyString, fc.constant(undefined)),
    heartbeatMs: fc.oneof(anyNumber, wrongType, anyString, fc.constant(undefined)),
    reclaimFailed: fc.oneof(fc.boolean(), wrongType, fc.constant(undefined)),
  };
  const hostileOptions = fc
    .tuple(
      fc.record(fields, { requiredKeys: [] }),
      fc.array(fc.tuple(hostileKeys, fc.anything()), { maxLength: 3 }),
      fc.constantFrom<'plain' | 'null-prototype' | 'inheriting'>('plain', 'null-prototype', 'inheriting'),
    )
    .map(([known, extra, shape]) => {
      const entries: Array<[string, unknown]> = [...extra, ...Object.entries(known)];
      if (shape === 'null-prototype') return withOwn(entries, null);
      // Fields on a prototype must be ignored, as if absent.
      if (shape === 'inheriting') return withOwn(entries, { code: 'inherited', runKey: 'inherited', leaseMs: 3 });
      return withOwn(entries);
    });
  // Mostly valid options, so that the success branch runs often too.
  const plausibleOptions = fc
    .record(
      {
        code: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
        runKey: fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
        name: fc.option(fc.string({ unit: 'grapheme', maxLength: 30 }), { nil: undefined }),
        leaseMs: fc.option(fc.integer({ min: 3, max: 3_600_000 }), { nil: undefined }),
      },
      { requiredKeys: ['code', 'runKey'] },
    )
    .map((known) => withOwn(Object.entries(known)));

  it('either acquires under a key that round-trips, or throws a typed error before any SQL', async () => {
    let succeeded = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(hostileOptions, plausibleOptions), async (options) => {
        counter.reset();
        const outcome = await settle(counted.acquire(options as JobAcquireOptions));
        if ('error' in outcome) {
          refused++;
          const typed = outcome.error instanceof InvalidJobIdentityOptionsError || outcome.error instanceof InvalidJobLeaseOptionsError;
          expect({ typed, statements: counter.count }).toEqual({ typed: true, statements: 0 });
          return;
        }
        succeeded++;
        expect(counter.count).toBe(1);
        const type = (own(options, 'type') as string | undefined) ?? 'SCHEDULE';
        const code = (own(options, 'code') as string).trim();
        const runKey = type === 'INITIAL' ? null : (own(options, 'runKey') as string).trim();
        const key = referenceKey(type, code, runKey);
        const [row] = (await inspector.query('SELECT * FROM "job-scheduler" WHERE "lockKey" = $1', [key])) as Row[];
        expect(row).toMatchObject({ lockKey: key, code, runKey });
        const { result } = outcome;
        if (result.acquired) {
          expect(result.idempotencyKey).toBe(key);
          expect(result.id).toBe(row.id);
          if (!result.reclaimed) expect(row.name).toBe(own(options, 'name') ?? null);
        }
        // The same options find the same row again.
        const again = await counted.acquire(options as JobAcquireOptions);
        if (again.acquired) expect({ id: again.id, key: again.idempotencyKey }).toEqual({ id: row.id, key });
      }),
      { numRuns: 400, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED) } : {}) },
    );
    // Both branches were exercised, not one of them by accident only.
    expect(succeeded).toBeGreaterThan(20);
    expect(refused).toBeGreaterThan(20);
  }, 60_000);

  it('ignores fields on a polluted Object.prototype', async () => {
    const prototype = Object.prototype as Record<string, unknown>;
    const polluted = { code: 'polluted', runKey: 'polluted', type: 'INITIAL', leaseMs: 1, heartbeatMs: 10, reclaimFailed: 'yes' };
    Object.assign(prototype, polluted);
    let missingRunKey: { result: JobAcquireResult } | { error: unknown };
    let clean: JobAcquireResult;
    try {
      counter.reset();
      missingRunKey = await settle(counted.acquire({ code: 'clean-code' }));
      clean = await counted.acquire({ code: 'clean-code', runKey: 'clean-run' });
    } finally {
      for (const key of Object.keys(polluted)) delete prototype[key];
    }
    expect('error' in missingRunKey && missingRunKey.error).toBeInstanceOf(InvalidJobIdentityOptionsError);
    expect(clean).toMatchObject({ acquired: true, leaseMs: 900_000, heartbeatMs: 60_000 });
    if (clean.acquired) expect(await rowById(clean.id)).toMatchObject({ code: 'clean-code', runKey: 'clean-run' });
  });
});

describe('SQL injection attempts', () => {
  const PAYLOADS = [
    `'; DROP TABLE "job-scheduler"; --`,
    `" OR 1=1 --`,
    `') ON CONFLICT DO NOTHING; DELETE FROM "job-scheduler"; --`,
    `'); UPDATE "job-scheduler" SET "status" = 'SUCCESS'; --`,
    `$1, $2) --`,
    `$$; DROP SCHEMA public CASCADE; $$`,
    `\\'; SELECT pg_sleep(10); --`,
    `*/ TRUNCATE "job-scheduler"; /*`,
    `E'\\x27'::text`,
    `%s%n%x`,
    `{"$gt": ""}`,
    `Robert'); DROP TABLE students;--`,
  ];

  it('stores code, runKey, name and data verbatim and harms nothing', async () => {
    const canary = await other.acquire({ code: 'canary', runKey: 'canary' });
    if (!canary.acquired) throw new Error('expected to acquire');
    expect(await other.complete(canary, { untouched: true })).toBe(true);
    const ids: string[] = [];
    for (const payload of PAYLOADS) {
      const code = payload.trim().slice(0, 64);
      const lock = await counted.acquire({ code, runKey: payload, name: payload });
      if (!lock.acquired) throw new Error(`expected to acquire ${payload}`);
      ids.push(lock.id);
      const data = { payload, [payload]: [payload] };
      expect(await counted.complete(lock, data)).toBe(true);
      expect(await rowById(lock.id)).toMatchObject({ code, runKey: payload, name: payload, status: 'SUCCESS', data });
      // As a callback's error message too.
      const thrown = await counted
        .runExclusive({ code, runKey: `${payload}/exclusive` }, async () => {
          throw new Error(payload);
        })
        .catch((error: unknown) => error);
      expect((thrown as Error).message).toBe(payload);
    }
    expect(await rowById(canary.id)).toMatchObject({ status: 'SUCCESS', data: { untouched: true } });
    const [{ rows }] = await database.sql<{ rows: number }>(`SELECT count(*)::int AS rows FROM "job-scheduler" WHERE "id" = ANY($1) AND "status" = 'SUCCESS'`, [
      ids,
    ]);
    expect(rows).toBe(PAYLOADS.length);
    const failed = await database.sql<{ data: unknown }>(`SELECT "data" FROM "job-scheduler" WHERE "runKey" LIKE '%/exclusive'`);
    expect(failed.map((row) => (row.data as { error: { message: string } }).error.message).sort()).toEqual([...PAYLOADS].sort());
  });
});

describe('finalize data that PostgreSQL cannot store', () => {
  const circular: Record<string, unknown> = { name: 'loop' };
  circular.self = circular;
  let deep: unknown = 'bottom';
  for (let level = 0; level < 20_000; level++) deep = [deep];
  const cases: Array<[string, unknown]> = [
    ['a circular structure', circular],
    ['a BigInt inside an object', { rows: 10n }],
    ['a bare BigInt', 10n],
    ['a function', () => 'data'],
    ['a symbol', Symbol('data')],
    [
      'a toJSON that throws',
      {
        toJSON: () => {
          throw new Error('no JSON for you');
        },
      },
    ],
    [
      'a getter that throws',
      Object.defineProperty({}, 'boom', {
        enumerable: true,
        get: () => {
          throw new Error('getter');
        },
      }),
    ],
    ['nesting deeper than the stack', deep],
    ['a NUL character in a value', { message: 'a\u0000b' }],
    ['a NUL character in a key', { 'k\u0000': 1 }],
    ['a NUL character from toJSON', { toJSON: () => 'x\u0000' }],
    ['a lone surrogate', ['\uD83D']],
  ];

  it.each(cases)('%s: a typed error before any SQL, and the lease is still owned and completes with valid data', async (_, data) => {
    const lock = await freshLease();
    counter.reset();
    for (const finalize of [() => counted.complete(lock, data), () => counted.fail(lock, data), () => counted.release(lock, data)]) {
      const outcome = await finalize().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(outcome).toBeInstanceOf(InvalidJobDataError);
      expect((outcome as Error).message).toMatch(/^Job data /);
    }
    expect(counter.count).toBe(0);
    expect(await rowById(lock.id)).toMatchObject({ status: 'RUNNING', ownerToken: lock.ownerToken, data: null });
    expect(await counted.heartbeat(lock)).toBe(true);
    expect(await counted.complete(lock, { recovered: true })).toBe(true);
    expect(await rowById(lock.id)).toMatchObject({ status: 'SUCCESS', data: { recovered: true } });
  });

  it('refuses NUL characters in identity fields before any SQL', async () => {
    counter.reset();
    for (const options of [
      { code: 'a\u0000b', runKey: 'r' },
      { code: 'a', runKey: 'r\u0000' },
      { code: 'a', runKey: 'r', name: '\u0000' },
      { code: 'a', runKey: '\uDC00' },
    ]) {
      await expect(counted.acquire(options)).rejects.toBeInstanceOf(InvalidJobIdentityOptionsError);
    }
    expect(counter.count).toBe(0);
  });

  it('records a callback error carrying NUL characters with U+FFFD in their place, and rethrows it unchanged', async () => {
    const error = new Error('upstream said \u0000\u0000 and \uD800');
    error.name = 'Weird\u0000Error';
    let key = '';
    const thrown = await counted
      .runExclusive({ code: 'hostile-data', runKey: `nul-${++sequence}` }, async (lease) => {
        key = lease.idempotencyKey;
        throw error;
      })
      .catch((caught: unknown) => caught);
    expect(thrown).toBe(error);
    const [row] = await database.sql<Row>('SELECT * FROM "job-scheduler" WHERE "lockKey" = $1', [key]);
    expect(row).toMatchObject({ status: 'FAIL', data: { error: { name: 'Weird\uFFFDError', message: 'upstream said \uFFFD\uFFFD and \uFFFD' } } });
  });

  it.each<[string, () => unknown]>([
    ['an object without a prototype', () => Object.create(null)],
    [
      'an object whose toString throws',
      () => ({
        toString: () => {
          throw new Error('no string');
        },
      }),
    ],
    [
      'an Error whose message getter throws',
      () =>
        Object.defineProperty(new Error('x'), 'message', {
          get: () => {
            throw new Error('getter');
          },
        }),
    ],
    [
      'a Proxy whose every trap throws',
      () =>
        new Proxy(
          {},
          {
            get: () => {
              throw new Error('trap');
            },
            getPrototypeOf: () => {
              throw new Error('trap');
            },
          },
        ),
    ],
    ['a thenable', () => ({ then: (resolve: (value: unknown) => void) => resolve('adopted instead of rethrown') })],
  ])('records FAIL for a callback that throws %s, and rethrows it', async (_, make) => {
    const value = make();
    let key = '';
    // Kept aside, not returned from a handler: a returned thenable would be adopted.
    let thrown: unknown = 'nothing thrown';
    await counted
      .runExclusive({ code: 'hostile-data', runKey: `thrown-${++sequence}` }, async (lease) => {
        key = lease.idempotencyKey;
        throw value;
      })
      .catch((caught: unknown) => {
        thrown = caught;
      });
    // Identity only: a matcher would touch the hostile value and trip its traps.
    expect(thrown === value).toBe(true);
    const [row] = await database.sql<Row>('SELECT * FROM "job-scheduler" WHERE "lockKey" = $1', [key]);
    expect(row.status).toBe('FAIL');
    expect(row.data).toMatchObject({ error: { name: expect.any(String), message: expect.any(String) } });
  });
});
