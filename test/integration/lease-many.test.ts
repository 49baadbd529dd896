import type { JobAcquiredLease, JobAcquireResult, JobSchedulerService } from '../../src/features';
import { startLeaseNodes } from '../support/lease-nodes';
import { StatementCounter } from '../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * completeMany, failMany and expireMany: one statement for many leases, each fenced on its own id
 * and owner token; two nodes on pools of their own play the holder (node-0) and the next owner.
 */
let database: TestDatabase;
const counter = new StatementCounter();
let holder: JobSchedulerService;
let other: JobSchedulerService;

beforeAll(async () => {
  database = await createTestDatabase();
  [holder, other] = await startLeaseNodes(database, 2, { logger: counter, logging: true });
});

afterAll(async () => {
  await database.drop();
});

const held = (result: JobAcquireResult): JobAcquiredLease => {
  if (!result.acquired) throw new Error('expected the run to be acquired');
  return result;
};

const rowsOf = (code: string) =>
  database.sql<{ runKey: string; status: string; ownerId: string; expired: boolean; fencingToken: string }>(
    `SELECT "runKey", status::text AS status, "ownerId", "modifiedAt" < CURRENT_TIMESTAMP - "leaseMs" * INTERVAL '1 millisecond' AS expired,
            "fencingToken"::text AS "fencingToken"
     FROM "job-scheduler" WHERE code = $1 ORDER BY "runKey"`,
    [code],
  );

describe('leases finalized or given up many at a time', () => {
  it('expireMany leaves owned rows RUNNING with their lease run out, in one statement; a wrong owner token changes nothing; the next owner reclaims them', async () => {
    const leases = (await holder.acquireBatch({ code: 'many.expire', runKeys: ['a', 'b', 'c'], leaseMs: 600_000 })).map(held);
    const forged = { id: leases[1].id, ownerToken: '00000000-0000-4000-8000-000000000000' };
    counter.reset();
    expect(await holder.expireMany([leases[0], forged, leases[2]])).toEqual([true, false, true]);
    expect(counter.statements.filter((text) => text.includes('unnest($1::uuid[], $2::uuid[])'))).toHaveLength(1);
    expect((await rowsOf('many.expire')).map(({ runKey, status, ownerId, expired }) => [runKey, status, ownerId, expired])).toEqual([
      ['a', 'RUNNING', 'node-0', true],
      ['b', 'RUNNING', 'node-0', false],
      ['c', 'RUNNING', 'node-0', true],
    ]);
    // Given up, not finished: another owner takes them over with a greater fencing token; 'b' stays held.
    const before = await rowsOf('many.expire');
    const taken = await other.acquireBatch({ code: 'many.expire', runKeys: ['a', 'b', 'c'], leaseMs: 600_000 });
    expect(taken.map((result) => result.acquired && result.reclaimed)).toEqual([true, false, true]);
    const after = await rowsOf('many.expire');
    expect(BigInt(after[0].fencingToken)).toBeGreaterThan(BigInt(before[0].fencingToken));
    // The first holder's tokens are fenced out.
    expect(await holder.completeMany(leases)).toEqual([false, true, false]);
    expect(await holder.expireMany([leases[0]])).toEqual([false]);
  });

  it('heartbeatMany extends the leases this owner still holds RUNNING, in one statement, and says which', async () => {
    const leases = (await holder.acquireBatch({ code: 'many.heartbeat', runKeys: ['a', 'b', 'c', 'd'], leaseMs: 600_000 })).map(held);
    const forged = { id: leases[2].id, ownerToken: '00000000-0000-4000-8000-000000000000' };
    expect(await holder.completeMany([leases[1]])).toEqual([true]);
    const modifiedAt = () =>
      database.sql<{ runKey: string; modified: string }>(
        `SELECT "runKey", "modifiedAt"::text AS modified FROM "job-scheduler" WHERE code = 'many.heartbeat' ORDER BY "runKey"`,
      );
    const before = await modifiedAt();
    await new Promise((resolve) => setTimeout(resolve, 20));
    counter.reset();
    expect(await holder.heartbeatMany([leases[0], leases[1], forged, leases[3]], { timeoutMs: 2_000 })).toEqual([true, false, false, true]);
    expect(counter.statements.filter((text) => text.includes('unnest($1::uuid[], $2::uuid[])'))).toHaveLength(1);
    const after = await modifiedAt();
    expect(after.map((row, index) => row.modified !== before[index].modified)).toEqual([true, false, false, true]);
    // Checked before any statement, as heartbeat's arguments are.
    await expect(holder.heartbeatMany([leases[0]], { timeoutMs: -1 })).rejects.toThrow(/timeoutMs/);
    await expect(holder.heartbeatMany([{ id: 'not-a-uuid', ownerToken: leases[0].ownerToken }])).rejects.toThrow(/id/);
  });

  it('completeMany and failMany apply per lease and only while the row is RUNNING under that owner', async () => {
    const leases = (await holder.acquireBatch({ code: 'many.finalize', runKeys: ['a', 'b', 'c', 'd'], leaseMs: 600_000 })).map(held);
    expect(await holder.completeMany([leases[0], leases[1]])).toEqual([true, true]);
    expect(await holder.failMany([leases[1], leases[2], leases[3]], { released: true })).toEqual([false, true, true]);
    expect((await rowsOf('many.finalize')).map(({ status }) => status)).toEqual(['SUCCESS', 'SUCCESS', 'FAIL', 'FAIL']);
    expect(await holder.expireMany(leases)).toEqual([false, false, false, false]);
  });

  it('completeMany and failMany with { again } (a retry of a statement whose answer was lost) count the rows this owner already finalized that way, and keep their data', async () => {
    const leases = (await holder.acquireBatch({ code: 'many.again', runKeys: ['a', 'b', 'c', 'd', 'e'], leaseMs: 600_000 })).map(held);
    // The first statement committed a and b (its answer lost); c is still RUNNING; d was failed; e went to another owner.
    expect(
      await holder.completeMany([
        { ...leases[0], data: { handlerMs: 1 } },
        { ...leases[1], data: { handlerMs: 2 } },
      ]),
    ).toEqual([true, true]);
    expect(await holder.fail(leases[3])).toBe(true);
    await holder.expireMany([leases[4]]);
    expect((await other.acquireBatch({ code: 'many.again', runKeys: ['e'], leaseMs: 600_000 }))[0].acquired).toBe(true);
    counter.reset();
    const again = await holder.completeMany(
      leases.map((lease, index) => ({ ...lease, data: { handlerMs: 10 + index } })),
      undefined,
      { again: true },
    );
    expect(again).toEqual([true, true, true, false, false]);
    expect(counter.statements.filter((text) => text.includes(`SET "status" = 'SUCCESS'`))).toHaveLength(1);
    // Without `again`, what this owner already completed does not apply.
    expect(await holder.completeMany([leases[0]])).toEqual([false]);
    expect(await holder.failMany([leases[3]], undefined, { again: true })).toEqual([true]);
    const rows = await database.sql<{ runKey: string; status: string; data: unknown }>(
      `SELECT "runKey", status::text AS status, data FROM "job-scheduler" WHERE code = 'many.again' ORDER BY "runKey"`,
    );
    expect(rows.map(({ runKey, status, data }) => [runKey, status, data])).toEqual([
      ['a', 'SUCCESS', { handlerMs: 1 }],
      ['b', 'SUCCESS', { handlerMs: 2 }],
      ['c', 'SUCCESS', { handlerMs: 12 }],
      ['d', 'FAIL', null],
      ['e', 'RUNNING', null],
    ]);
    await expect(holder.completeMany([leases[2]], undefined, { again: 'yes' } as never)).rejects.toThrow(/again/);
  });

  it("completeMany gives each row the lease's own data where it carries one, else the call's, in one statement", async () => {
    const leases = (await holder.acquireBatch({ code: 'many.own-data', runKeys: ['a', 'b', 'c', 'd'], leaseMs: 600_000 })).map(held);
    const forged = { id: leases[3].id, ownerToken: '00000000-0000-4000-8000-000000000000', data: { handlerMs: 4 } };
    counter.reset();
    const applied = await holder.completeMany(
      [
        { id: leases[0].id, ownerToken: leases[0].ownerToken, data: { handlerMs: 1 } },
        { id: leases[1].id, ownerToken: leases[1].ownerToken, data: { handlerMs: 2, note: 'it\'s "quoted", {braced} \\ and, comma\'d' } },
        leases[2],
        forged,
      ],
      { shared: true },
    );
    expect(applied).toEqual([true, true, true, false]);
    expect(counter.statements.filter((text) => text.includes(`SET "status" = 'SUCCESS'`))).toHaveLength(1);
    const rows = await database.sql<{ runKey: string; status: string; data: unknown; finished: string }>(
      `SELECT "runKey", status::text AS status, data, "finishedAt"::text AS finished FROM "job-scheduler" WHERE code = 'many.own-data' ORDER BY "runKey"`,
    );
    expect(rows.map(({ runKey, status, data }) => [runKey, status, data])).toEqual([
      ['a', 'SUCCESS', { handlerMs: 1 }],
      ['b', 'SUCCESS', { handlerMs: 2, note: 'it\'s "quoted", {braced} \\ and, comma\'d' }],
      ['c', 'SUCCESS', { shared: true }],
      ['d', 'RUNNING', null],
    ]);
    expect(new Set(rows.slice(0, 3).map((row) => row.finished)).size).toBe(1);
    // A row's data is checked before any statement, as complete's is.
    const more = (await holder.acquireBatch({ code: 'many.own-data', runKeys: ['e'], leaseMs: 600_000 })).map(held);
    await expect(holder.completeMany([{ ...more[0], data: { bad: 1n } }])).rejects.toThrow(/JSON/);
    expect(await holder.failMany([{ id: more[0].id, ownerToken: more[0].ownerToken, data: { handlerMs: 5, error: { name: 'Error', message: 'x' } } }])).toEqual(
      [true],
    );
  });
});
