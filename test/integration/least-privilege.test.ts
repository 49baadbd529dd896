import { randomBytes } from 'node:crypto';
import { JobSchedulerService } from '../../src/features';
import { StatementCounter } from '../support/statement-counter';
import { adminQuery, createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * What the README's security notes claim: the application's role needs SELECT, INSERT and UPDATE
 * on the lease table, USAGE on its fencing-token sequence (and on its schema), EXECUTE on the acquire
 * function (granted to PUBLIC unless default privileges revoke it), nothing more; no
 * superuser, no DDL, no DELETE.
 */
let database: TestDatabase;
let canCreateRoles = false;
const roles: string[] = [];

const asRole = (url: string, role: string, password: string): string => {
  const parsed = new URL(url);
  parsed.username = role;
  parsed.password = password;
  return parsed.toString();
};

beforeAll(async () => {
  database = await createTestDatabase();
  const [me] = await database.sql<{ allowed: boolean }>('SELECT rolsuper OR rolcreaterole AS allowed FROM pg_roles WHERE rolname = current_user');
  canCreateRoles = me.allowed;
});

afterAll(async () => {
  // The grants live in the test database: once it is dropped, its roles can go too.
  await database.drop();
  for (const role of roles) await adminQuery(`DROP ROLE IF EXISTS "${role}"`);
});

const startAs = async (grants: string[], sequence = true, unnamed?: { counter: StatementCounter; execute: boolean }): Promise<JobSchedulerService> => {
  const role = `lease_app_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  roles.push(role);
  await adminQuery(`CREATE ROLE "${role}" LOGIN PASSWORD '${password}' NOSUPERUSER NOCREATEDB NOCREATEROLE`);
  await database.sql(`GRANT CONNECT ON DATABASE "${database.name}" TO "${role}"`);
  await database.sql(`GRANT USAGE ON SCHEMA public TO "${role}"`);
  for (const grant of grants) await database.sql(`GRANT ${grant} ON "job-scheduler" TO "${role}"`);
  if (sequence) await database.sql(`GRANT USAGE ON SEQUENCE "job-scheduler_fencingToken_seq" TO "${role}"`);
  const url = asRole(database.url, role, password);
  if (!unnamed) return new JobSchedulerService(await database.dataSource({ url, poolSize: 1 }));
  if (unnamed.execute) await database.sql(`GRANT EXECUTE ON FUNCTION ${ACQUIRE_FUNCTION} TO "${role}"`);
  const dataSource = await database.dataSource({ url, poolSize: 1, logger: unnamed.counter, logging: true });
  return new JobSchedulerService(dataSource, { preparedStatements: false });
};

const ACQUIRE_FUNCTION = `"job-scheduler_acquire"(varchar, varchar, varchar, "job-scheduler_type_enum", uuid, varchar, integer, varchar, boolean)`;
const functionCalls = (counter: StatementCounter) => counter.statements.filter((text) => text.includes('"job-scheduler_acquire"(')).length;

describe('the application role', () => {
  it('runs every lease operation with SELECT, INSERT and UPDATE on the table and USAGE on its sequence only', async () => {
    if (!canCreateRoles) {
      process.stdout.write('least-privilege test: the test server user cannot create roles; nothing to check here\n');
      return;
    }
    const jobs = await startAs(['SELECT', 'INSERT', 'UPDATE']);
    const lock = await jobs.acquire({ code: 'least-privilege', runKey: 'r1', leaseMs: 60_000 });
    if (!lock.acquired) throw new Error('expected to acquire');
    expect(await jobs.heartbeat(lock)).toBe(true);
    expect(await jobs.release(lock)).toBe(true);
    const again = await jobs.acquire({ code: 'least-privilege', runKey: 'r1' });
    if (!again.acquired) throw new Error('expected to reclaim');
    expect(await jobs.fail(again, { step: 'fail' })).toBe(true);
    expect(await jobs.runExclusive({ code: 'least-privilege', runKey: 'r1' }, async () => 'done')).toEqual({ acquired: true, result: 'done' });
    expect(await jobs.acquire({ code: 'least-privilege', runKey: 'r1' })).toEqual({ acquired: false });
    // The expiry table's triggers run as their owner: no grant on that table for the writes above.
    // Without SELECT on it, the take-over scan reads the job-scheduler table itself.
    const key = { code: 'least-privilege', prefix: '', maxAttempts: 3, drop: false, lateMs: null, claimable: true };
    expect(await jobs.takeOverAbandoned([key], { dueBy: Date.now(), limit: 10 })).toEqual({ claimed: [], toEnd: [], unknown: [] });
  });

  it('cannot take a run without UPDATE (the grant is needed)', async () => {
    if (!canCreateRoles) return;
    const jobs = await startAs(['SELECT', 'INSERT']);
    await expect(jobs.acquire({ code: 'least-privilege', runKey: 'r2' })).rejects.toThrow(/permission denied/);
  });

  it('cannot draw a fencing token without USAGE on the sequence (the grant is needed)', async () => {
    if (!canCreateRoles) return;
    const jobs = await startAs(['SELECT', 'INSERT', 'UPDATE'], false);
    await expect(jobs.acquire({ code: 'least-privilege', runKey: 'r3' })).rejects.toThrow(/permission denied for sequence/);
  });

  it('with preparedStatements: false, acquires through the acquire function with EXECUTE (granted to PUBLIC by default)', async () => {
    if (!canCreateRoles) return;
    const counter = new StatementCounter();
    const jobs = await startAs(['SELECT', 'INSERT', 'UPDATE'], true, { counter, execute: false });
    const lock = await jobs.acquire({ code: 'least-privilege', runKey: 'fn-1' });
    if (!lock.acquired) throw new Error('expected to acquire');
    expect(await jobs.release(lock)).toBe(true);
    expect(await jobs.acquire({ code: 'least-privilege', runKey: 'fn-1' })).toMatchObject({ acquired: true, reclaimed: true });
    expect(functionCalls(counter)).toBe(2);
  });

  it('without EXECUTE on the function, sends the statement itself; with it granted to the role, calls the function', async () => {
    if (!canCreateRoles) return;
    await database.sql(`REVOKE EXECUTE ON FUNCTION ${ACQUIRE_FUNCTION} FROM PUBLIC`);
    try {
      const refused = new StatementCounter();
      const withoutExecute = await startAs(['SELECT', 'INSERT', 'UPDATE'], true, { counter: refused, execute: false });
      expect(await withoutExecute.acquire({ code: 'least-privilege', runKey: 'fn-2' })).toMatchObject({ acquired: true });
      expect(await withoutExecute.acquire({ code: 'least-privilege', runKey: 'fn-3' })).toMatchObject({ acquired: true });
      expect(functionCalls(refused)).toBe(1);

      const granted = new StatementCounter();
      const withExecute = await startAs(['SELECT', 'INSERT', 'UPDATE'], true, { counter: granted, execute: true });
      expect(await withExecute.acquire({ code: 'least-privilege', runKey: 'fn-4' })).toMatchObject({ acquired: true });
      expect(await withExecute.acquire({ code: 'least-privilege', runKey: 'fn-4' })).toEqual({ acquired: false });
      expect(functionCalls(granted)).toBe(2);
    } finally {
      await database.sql(`GRANT EXECUTE ON FUNCTION ${ACQUIRE_FUNCTION} TO PUBLIC`);
    }
  });

  it('through the function, still cannot take a run without UPDATE or draw a token without USAGE', async () => {
    if (!canCreateRoles) return;
    const noUpdate = await startAs(['SELECT', 'INSERT'], true, { counter: new StatementCounter(), execute: false });
    await expect(noUpdate.acquire({ code: 'least-privilege', runKey: 'fn-5' })).rejects.toThrow(/permission denied/);
    const noSequence = await startAs(['SELECT', 'INSERT', 'UPDATE'], false, { counter: new StatementCounter(), execute: false });
    await expect(noSequence.acquire({ code: 'least-privilege', runKey: 'fn-6' })).rejects.toThrow(/permission denied for sequence/);
  });
});
