import { acquireFunctionStatement } from '../../migrations/support/job-scheduler-acquire-function';
import { qualifiedTableName } from '../../src/features/job-scheduler/job-scheduler.sql';
import { createJobSchedulerStatements } from '../../src/features/job-scheduler/job-scheduler.statements';

const parameters = {
  lockKey: 'k',
  code: 'c',
  name: null,
  type: 'SCHEDULE',
  ownerToken: '00000000-0000-4000-8000-000000000000',
  runKey: 'r',
  leaseMs: 1_000,
  ownerId: 'node',
  reclaimFailed: true,
};

describe('the acquire function of migration 1764547200005', () => {
  it.each([undefined, 'lease ops'])('runs exactly the lease acquire statement of this release (schema %s)', (schema) => {
    const table = qualifiedTableName('job-scheduler', schema);
    const sequence = qualifiedTableName('job-scheduler_fencingToken_seq', schema);
    const statements = createJobSchedulerStatements(
      table,
      sequence,
      qualifiedTableName('job-scheduler_lease_expiry', schema),
      qualifiedTableName('job-scheduler_acquire', schema),
    );
    // A change of the statement must ship a migration that replaces the function.
    expect(acquireFunctionStatement(table, sequence)).toBe(statements.acquire(parameters).text);
  });

  it('is called with the statement values, unnamed-safe, and only when the executor knows its name', () => {
    const withFunction = createJobSchedulerStatements(
      '"job-scheduler"',
      '"job-scheduler_fencingToken_seq"',
      '"job-scheduler_lease_expiry"',
      '"ops"."job-scheduler_acquire"',
    );
    const acquire = withFunction.acquire(parameters);
    expect(acquire.viaFunction).toBe('SELECT * FROM "ops"."job-scheduler_acquire"($1, $2, $3, $4, $5, $6, $7, $8, $9)');
    expect(acquire.values).toHaveLength(9);
    expect(acquire.secret).toBe(parameters.ownerToken);
    expect(withFunction.heartbeat('id', 'token').viaFunction).toBeUndefined();
    const without = createJobSchedulerStatements('"job-scheduler"', '"job-scheduler_fencingToken_seq"', '"job-scheduler_lease_expiry"');
    expect(without.acquire(parameters).viaFunction).toBeUndefined();
  });
});
