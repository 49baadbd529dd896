import { join } from 'node:path';
import { GroupedChild, TS_NODE_ARGUMENTS } from '../support/fleet';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * A backend terminated just as its connection completes (pg_terminate_backend, a server
 * restart) must cost the caller one failed statement, never the process. node-postgres takes
 * the pool's error listener off a client while it is checked out, and TypeORM attaches its own
 * only a microtask after the checkout; a FATAL error in the same TCP chunk as the startup's
 * ReadyForQuery fell in between, and an 'error' event without a listener is an uncaught
 * exception. Found by the chaos run (a worker crashed on 57P01). The node runs in a process of
 * its own here, so that a crash shows as its exit code. The lease guards every new connection
 * of the DataSource it is given, so the application's own TypeORM statements there (the outbox
 * insert of the README's pattern) are covered too.
 */
let database: TestDatabase;
const child = new GroupedChild();

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  child.kill();
  await database.drop();
});

it('survives a FATAL error that arrives with a ReadyForQuery, at startup or at a hand-off', async () => {
  const run = await child.run(process.execPath, [...TS_NODE_ARGUMENTS, join(__dirname, 'fixtures', 'fatal-after-startup.child.ts')], {
    cwd: join(__dirname, '..', '..'),
    timeoutMs: 30_000,
    env: { ...process.env, FATAL_TEST_DATABASE_URL: database.url },
  });
  expect({ exitCode: run.exitCode, output: run.exitCode === 0 ? '' : run.output }).toEqual({ exitCode: 0, output: '' });
  const report = JSON.parse(run.output.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
  // The statement on the terminated connection fails (its caller is told); the next ones work.
  const failed = expect.stringMatching(/^threw /);
  expect(report).toEqual({
    startup: { warm: 'ok', app: failed, lease: failed, after: 'ok', injected: 2 },
    // The lease statement had its result before the FATAL. The lease gives its connection back
    // only once the whole chunk is read, so the pool discards the dead connection instead of
    // handing it to the waiting query, which gets a new one.
    handOff: { lease: 'ok', app: 'ok', after: 'ok', injected: 1 },
  });
}, 40_000);
