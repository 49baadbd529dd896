import { type JobRunRecord, JobSchedulerService } from '../../../src/features';
import { JobScheduleEngine } from '../../../src/features/scheduling/job-schedule-engine';
import { occurrenceRunKey } from '../../../src/features/scheduling/occurrence/occurrence-keys';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { systemTimers } from '../../../src/features/scheduling/scheduler-ports';
import { sleep } from '../../support/lease-nodes';
import { StatementCounter } from '../../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

interface Instance {
  engine: JobScheduleEngine;
  counter: StatementCounter;
  records: JobRunRecord[];
  running: number;
  peak: number;
  ran: string[];
}

/**
 * `count` scheduler instances, each on a DataSource (a pool) of its own with a statement counter,
 * on system timers, with one per-tenant job due once at `dueAt`.
 */
const startInstances = async (
  count: number,
  job: { name: string; tenants: readonly unknown[]; concurrency: number; workMs: number },
  dueAt: number,
): Promise<Instance[]> =>
  Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const counter = new StatementCounter();
      const jobs = new JobSchedulerService(await database.dataSource({ logger: counter, logging: true, poolSize: 5 }), { nodeId: `instance-${index}` });
      // Offsets 0, 1/count, 2/count of the list: each instance starts on a stretch of its own.
      const random = () => index / count;
      const engine = new JobScheduleEngine({
        timers: systemTimers,
        lease: jobs,
        logger: silent,
        random,
        tenants: { listTenants: () => job.tenants as string[] },
      });
      const declared = checkJobDeclaration(job.name, { every: '1h', tenancy: 'per-tenant', tenantConcurrency: job.concurrency });
      const instance: Instance = { engine, counter, records: [], running: 0, peak: 0, ran: [] };
      engine.register({
        declaration: { ...declared, schedule: { description: 'once', next: (after) => (after < dueAt ? dueAt : null) } },
        enabled: true,
        handler: async ({ tenantId }) => {
          instance.peak = Math.max(instance.peak, ++instance.running);
          await sleep(job.workMs);
          instance.running--;
          instance.ran.push(tenantId as string);
        },
      });
      engine.onRun((record) => instance.records.push(record));
      return instance;
    }),
  );

/** Starts the instances, waits until each has recorded every tenant once, and stops them. */
const runOnce = async (instances: Instance[], tenantCount: number): Promise<void> => {
  await Promise.all(instances.map((instance) => instance.engine.start()));
  for (let waited = 0; instances.some((instance) => instance.records.length < tenantCount); waited += 50) {
    if (waited > 45_000) throw new Error(`not done: ${instances.map((instance) => instance.records.length).join(', ')} of ${tenantCount}`);
    await sleep(50);
  }
  await Promise.all(instances.map((instance) => instance.engine.stop()));
};

const kind = (statement: string): string =>
  statement.startsWith('WITH candidate')
    ? 'claim'
    : statement.startsWith('WITH inserted')
      ? 'acquire'
      : statement.includes(`"status" = 'SUCCESS'`)
        ? 'complete'
        : 'other';

describe('per-tenant fan-out on PostgreSQL, three instances', () => {
  it('runs every tenant exactly once, at most tenantConcurrency at once per instance, claiming tenants in batches', async () => {
    const tenants = Array.from({ length: 90 }, (_, index) => `tenant-${index}`);
    const name = 'billing.fan-out';
    const instances = await startInstances(3, { name, tenants, concurrency: 3, workMs: 25 }, Date.now() + 1_500);
    await runOnce(instances, tenants.length);

    // Exactly once: one SUCCESS row per tenant, one successful run per tenant across instances.
    const rows = await database.sql<{ runKey: string; status: string; attempts: number }>(
      'SELECT "runKey", status, attempts FROM "job-scheduler" WHERE code = $1 ORDER BY "runKey"',
      [name],
    );
    expect(rows).toHaveLength(tenants.length);
    expect(rows.every((row) => row.status === 'SUCCESS' && row.attempts === 1)).toBe(true);
    expect(instances.flatMap((instance) => instance.ran).sort()).toEqual([...tenants].sort());
    for (const instance of instances) {
      expect(instance.records).toHaveLength(tenants.length);
      expect(instance.records.every((record) => record.outcome === 'succeeded' || record.outcome === 'skipped-locked')).toBe(true);
    }

    // The bound, and that it is reached: each instance (its first claim uncontested) ran 3 at once, never more.
    expect(instances.map((instance) => instance.peak)).toEqual([3, 3, 3]);

    // Statements: claims (never one acquire per tenant) and at most one complete per run (the runs
    // that end in one turn share one).
    const counts = instances.map((instance) => {
      const byKind: Record<string, number> = {};
      for (const statement of instance.counter.statements) byKind[kind(statement)] = (byKind[kind(statement)] ?? 0) + 1;
      return byKind;
    });
    expect(counts.map((byKind) => byKind.acquire ?? 0)).toEqual([0, 0, 0]);
    const completes = counts.reduce((sum, byKind) => sum + (byKind.complete ?? 0), 0);
    expect(completes).toBeGreaterThan(0);
    expect(completes).toBeLessThanOrEqual(tenants.length);
    const claims = counts.reduce((sum, byKind) => sum + (byKind.claim ?? 0), 0);
    // Claims take several tenants each: the first fills the slots, the next ones run ahead.
    expect(claims).toBeLessThanOrEqual(tenants.length / 2);
    const total = instances.reduce((sum, instance) => sum + instance.counter.count, 0);
    expect(total / tenants.length).toBeLessThanOrEqual(1.5);
    // The walk spreads: every instance ran some tenants.
    expect(instances.every((instance) => instance.ran.length > 0)).toBe(true);
  });

  it('keeps "acme" and "acme\\t" apart, and records an invalid tenant with JOB_TENANT_INVALID naming it', async () => {
    const name = 'billing.fan-out-keys';
    const listed = ['acme', 'acme\t', 'bad\u0000tenant', 'x'.repeat(2_000)];
    const dueAt = Date.now() + 1_000;
    const [instance] = await startInstances(1, { name, tenants: listed, concurrency: 2, workMs: 1 }, dueAt);
    await runOnce([instance], listed.length);
    expect(instance.ran.sort()).toEqual(['acme', 'acme\t']);
    const rows = await database.sql<{ runKey: string; status: string }>('SELECT "runKey", status FROM "job-scheduler" WHERE code = $1 ORDER BY "runKey"', [
      name,
    ]);
    expect(rows).toEqual([
      { runKey: occurrenceRunKey(dueAt, 'acme'), status: 'SUCCESS' },
      { runKey: occurrenceRunKey(dueAt, 'acme\t'), status: 'SUCCESS' },
    ]);
    const failed = instance.records.filter((record) => record.outcome === 'failed');
    expect(failed.map((record) => [record.errorCode, record.tenantId?.slice(0, 5)])).toEqual([
      ['JOB_TENANT_INVALID', 'bad\u0000t'],
      ['JOB_TENANT_INVALID', 'xxxxx'],
    ]);
    expect((failed[0].error as Error).message).toContain('"bad\\u0000tenant"');
  });
});
