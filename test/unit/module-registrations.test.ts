import type { DynamicModule } from '@nestjs/common';
import { describeDifference, differingKeysAmong, ModuleRegistrations, sameOptionValue } from '../../src/features/job-scheduler/module-registrations';
import { describeMissingPart, missingSchemaParts, type RequiredRelation } from '../../src/features/job-scheduler/schema/schema-check';

describe('forRoot() registrations', () => {
  it('compare plain values member by member, anything else by identity', () => {
    const registry = new (class Registry {})();
    expect(sameOptionValue({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 })).toBe(true);
    expect(sameOptionValue({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameOptionValue({ metrics: { registry } }, { metrics: { registry } })).toBe(true);
    expect(sameOptionValue({ metrics: { registry } }, { metrics: { registry: new (class Registry {})() } })).toBe(false);
    expect(sameOptionValue({ list: () => [] }, { list: () => [] })).toBe(false);
    expect(sameOptionValue([1, 2], [1, 2, 3])).toBe(false);
  });

  it('name the keys that differ, never their values', () => {
    const keys = differingKeysAmong([{ nodeId: 'a', lateToleranceMs: 1 }, { nodeId: 'a' }, { nodeId: 'secret-b', lateToleranceMs: 1 }]);
    expect(keys).toEqual(['lateToleranceMs', 'nodeId']);
    expect(describeDifference(keys)).toBe('they differ in "lateToleranceMs", "nodeId"');
    expect(describeDifference([])).toBe('they differ in how they are registered (forRootAsync, global or dataSource)');
  });

  it('return the same DynamicModule for the same options, another one for other options', () => {
    const registrations = new ModuleRegistrations();
    let made = 0;
    const register = (): DynamicModule => ({ module: class Made {}, providers: [{ provide: 'n', useValue: ++made }] });
    const first = registrations.once({}, register);
    expect(registrations.once({}, register)).toBe(first);
    expect(registrations.once({ start: false }, register)).not.toBe(first);
    expect(made).toBe(2);
  });
});

describe('the schema check', () => {
  const relations: RequiredRelation[] = [
    { role: 'the job-scheduler table', name: '"job-scheduler"', kind: 'table', migration: 'Create1', columns: { id: null, ownerToken: 'Upgrade1' } },
    { role: 'the sequence', name: '"job-scheduler_fencingToken_seq"', kind: 'sequence', migration: 'Sequence3' },
    { role: 'the pause table', name: '"job-scheduler-pause"', kind: 'table', migration: 'Pause8', otherwise: 'or pauses: false' },
  ];

  it('names each missing relation and column with its own migration', () => {
    const missing = missingSchemaParts(relations, [
      { name: '"job-scheduler"', relkind: 'r', columns: ['id'] },
      { name: '"job-scheduler_fencingToken_seq"', relkind: 'S', columns: [] },
      { name: '"job-scheduler-pause"', relkind: null, columns: null },
    ]);
    expect(missing.map(describeMissingPart)).toEqual([
      'the job-scheduler table "job-scheduler" has no column "ownerToken" (migration Upgrade1)',
      'the pause table "job-scheduler-pause" does not exist (migration Pause8, or pauses: false)',
    ]);
  });

  it('finds nothing missing in a complete schema, and a table where a sequence should be is missing', () => {
    const complete = [
      { name: '"job-scheduler"', relkind: 'r', columns: ['id', 'ownerToken', 'extra'] },
      { name: '"job-scheduler_fencingToken_seq"', relkind: 'S', columns: [] },
      { name: '"job-scheduler-pause"', relkind: 'p', columns: [] },
    ];
    expect(missingSchemaParts(relations, complete)).toEqual([]);
    const wrongKind = complete.map((row) => (row.relkind === 'S' ? { ...row, relkind: 'r' } : row));
    expect(missingSchemaParts(relations, wrongKind)).toMatchObject([{ role: 'the sequence', migration: 'Sequence3' }]);
  });
});
