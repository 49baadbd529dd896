import { announcementChannelOf, qualifiedTableName } from '../../src/features/job-scheduler/job-scheduler.sql';
import { createJobSchedulerStatements } from '../../src/features/job-scheduler/job-scheduler.statements';

describe('lease SQL', () => {
  const statements = createJobSchedulerStatements(
    qualifiedTableName('job-scheduler'),
    qualifiedTableName('job-scheduler_fencingToken_seq'),
    qualifiedTableName('job-scheduler_lease_expiry'),
  );
  const acquire = statements.acquire({
    lockKey: 'v2:key',
    code: "code'; DROP TABLE x; --",
    name: null,
    type: 'SCHEDULE',
    ownerToken: '00000000-0000-4000-8000-000000000000',
    runKey: 'run',
    leaseMs: 1000,
    ownerId: 'node',
    reclaimFailed: true,
  });

  it('quotes identifiers, and names the schema when given', () => {
    expect(qualifiedTableName('job-scheduler')).toBe('"job-scheduler"');
    expect(qualifiedTableName('job-scheduler', 'ops')).toBe('"ops"."job-scheduler"');
    expect(qualifiedTableName('we"ird')).toBe('"we""ird"');
  });

  it('sends every caller value as a parameter, never in the text', () => {
    expect(acquire.text).not.toContain('DROP TABLE');
    expect(acquire.values).toContain("code'; DROP TABLE x; --");
    // insert (and its guard), reclaim, the loser's status read: the table named once per use.
    expect(acquire.text.match(/"job-scheduler"/g)).toHaveLength(4);
  });

  it('acquires with one statement: insert-or-nothing, then a guarded reclaim', () => {
    expect(acquire.text).toMatch(/ON CONFLICT \("lockKey"\) DO NOTHING/);
    expect(acquire.text).toMatch(/NOT EXISTS \(SELECT 1 FROM inserted\)/);
    expect(acquire.text).toMatch(/UNION ALL/);
    expect(acquire.text).not.toMatch(/DO UPDATE/);
    expect(acquire.text).toMatch(/COALESCE\(t\."leaseMs", \$7\)/);
  });

  const batchOf = (ownerTokens: Array<string | null> | null, again = false, announce = false) =>
    statements.acquireBatch({
      lockKeys: ['v2:a', 'v2:b'],
      runKeys: ['a', 'b'],
      codes: ['code', 'other'],
      names: [null, 'Other'],
      leaseMs: [1000, 2000],
      type: 'SCHEDULE',
      ownerId: 'node',
      reclaimFailed: false,
      ownerTokens,
      again,
      announce,
    });

  it('claims a batch with one statement whose winners get owner tokens drawn by the database, none sent', () => {
    const batch = batchOf(null);
    expect(batch.secret).toBeUndefined();
    expect(batch.values).toEqual([['v2:a', 'v2:b'], ['a', 'b'], ['code', 'other'], [null, 'Other'], [1000, 2000], 'SCHEDULE', 'node', false, null]);
    expect(batch.text).toMatch(/unnest\(\$1::text\[\], \$2::text\[\], \$3::text\[\], \$4::text\[\], \$5::int\[\], \$9::uuid\[\]\)/);
    expect(batch.text).toMatch(/ON CONFLICT \("lockKey"\) DO NOTHING/);
    expect(batch.text).toMatch(/FOR UPDATE OF t SKIP LOCKED/);
    expect(batch.text.match(/ORDER BY (c|t)\."lockKey"/g)).toHaveLength(2);
    expect(batch.text.match(/COALESCE\(\w\."ownerToken", gen_random_uuid\(\)\)/g)).toHaveLength(2);
    expect(batch.text).not.toMatch(/DO UPDATE/);
  });

  it("claims a batch announced: the lock keys won, and only those, go to NOTIFY on the channel of the table's oid", () => {
    const announced = batchOf(null, false, true);
    expect(announced.values).toEqual(batchOf(null).values);
    expect(announced.text).toContain(
      `pg_notify('job_claims_' || ('"job-scheduler"'::regclass::oid)::text, string_agg(a."lockKey", ' ')) FROM (SELECT "lockKey", (row_number() OVER ()) / 150 AS part FROM won)`,
    );
    // Read by the final SELECT, so that the CTE runs.
    expect(announced.text).toMatch(/\(SELECT count\(\*\) FROM announced\) AS "announced"/);
    expect(batchOf(null).text).not.toMatch(/pg_notify/);
    expect(batchOf(null, true, true).text).toMatch(/mine AS[^]*pg_notify/);
    // A table name with a quote stays one literal.
    expect(announcementChannelOf(`"it's"."job-scheduler"`)).toBe(`'job_claims_' || ('"it''s"."job-scheduler"'::regclass::oid)::text`);
  });

  it('claims a batch under the owner tokens the caller drew, redacted as secrets', () => {
    const tokens = ['6f1c0d3e-8a51-4a39-9f5e-2b7c1d0e4a11', null];
    const batch = batchOf(tokens);
    expect(batch.secret).toBe(tokens);
    expect(batch.values[8]).toBe(tokens);
    expect(batch.text).toBe(batchOf(null).text);
  });

  it('claims a batch again: a run RUNNING under the token named is won again, visible or still in flight, never reclaimed from itself', () => {
    const again = batchOf(['6f1c0d3e-8a51-4a39-9f5e-2b7c1d0e4a11', null], true).text;
    expect(again).not.toBe(batchOf(null).text);
    // Visible: a fenced update of the row, as a heartbeat.
    expect(again).toMatch(/mine AS \(\s*UPDATE [^]*SET "modifiedAt" = CURRENT_TIMESTAMP[^]*t\."ownerToken" = c\."ownerToken" AND t\."status" = 'RUNNING'/);
    // In flight: the insert's conflict waits for it, then applies only under the same token.
    expect(again).toMatch(
      /ON CONFLICT \("lockKey"\) DO UPDATE SET "modifiedAt" = CURRENT_TIMESTAMP\s+WHERE t\."ownerToken" = EXCLUDED\."ownerToken" AND t\."status" = 'RUNNING'/,
    );
    expect(again).toMatch(/AND NOT \(t\."status" = 'RUNNING' AND t\."ownerToken" IS NOT DISTINCT FROM c\."ownerToken"\)/);
    expect(again).toMatch(/UNION ALL SELECT \* FROM mine/);
  });

  it('fences every mutation by id, owner token and RUNNING', () => {
    for (const statement of [statements.heartbeat('i', 't'), statements.complete('i', 't', null), statements.fail('i', 't', '{}')]) {
      expect(statement.text).toMatch(/WHERE "id" = \$1 AND "ownerToken" = \$2 AND "status" = 'RUNNING'/);
      expect(statement.values.slice(0, 2)).toEqual(['i', 't']);
    }
  });
});
