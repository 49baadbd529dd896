import { Module, type Provider, type Type } from '@nestjs/common';
import { Registry } from 'prom-client';
import {
  type JobExecution,
  JobSchedulerStatus,
  Scheduled,
  ScheduledJobsService,
  SchedulingModule,
  type SchedulingModuleOptions,
  TENANT_DIRECTORY,
  currentJobExecution,
} from '../../../src/features';
import { FixedClock, ManualTimers } from '../../../src/features/testing';
import { MAX_CLAIM_STAGGER_MS } from '../../../src/features/scheduling/occurrence/ahead-claims';
import { type NestNode, startNestNode } from '../../support/nest-node';
import { sleep } from '../../support/lease-nodes';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

let database: TestDatabase;
const started: NestNode[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((node) => node.close()));
});
afterAll(async () => {
  await database.drop();
});

/** What the jobs below saw, per test. */
const seen: { job: string; execution: JobExecution; node: string; scope?: JobExecution }[] = [];
let gate: Promise<void> = Promise.resolve();
beforeEach(async () => {
  seen.length = 0;
  gate = Promise.resolve();
  // Each test starts from an empty history (the jobs and their instants repeat between tests).
  await database.sql('DELETE FROM "job-scheduler"');
});

class NodeName {
  constructor(readonly name: string) {}
}

@Scheduled('reports.hourly-digest', { cron: '0 * * * *', timeZone: 'Europe/Paris' })
class HourlyDigestJob {
  constructor(private readonly node: NodeName) {}
  async run(execution: JobExecution) {
    seen.push({ job: 'reports.hourly-digest', execution, node: this.node.name });
  }
}

@Scheduled('reports.slow-export', { every: '1m', timeoutMs: 20_000 })
class SlowExportJob {
  async run(execution: JobExecution) {
    seen.push({ job: 'reports.slow-export', execution, node: '' });
    await gate;
  }
}

@Scheduled('billing.invoice-tenants', { every: '1m', tenancy: 'per-tenant' })
class InvoiceTenantsJob {
  constructor(private readonly node: NodeName) {}
  async run(execution: JobExecution) {
    if (execution.tenantId === 'globex') throw new Error('globex ledger is locked');
    await Promise.resolve();
    seen.push({ job: 'billing.invoice-tenants', execution, node: this.node.name, scope: currentJobExecution() });
  }
}

@Scheduled('health.every-second', { every: '1s' })
class EverySecondJob {
  constructor(private readonly node: NodeName) {}
  async run(execution: JobExecution) {
    seen.push({ job: 'health.every-second', execution, node: this.node.name });
    await sleep(50);
  }
}

const schedulingNode = async (
  name: string,
  jobs: Type[],
  scheduling: SchedulingModuleOptions,
  extra: { shutdownGraceMs?: number } = {},
  providers: Provider[] = [],
): Promise<NestNode & { scheduler: ScheduledJobsService }> => {
  @Module({ providers: [...jobs, ...providers, { provide: NodeName, useValue: new NodeName(name) }] })
  class JobsModule {}
  const node = await startNestNode(database.url, {
    jobScheduler: { nodeId: name, shutdownGraceMs: extra.shutdownGraceMs },
    imports: [SchedulingModule.forRoot({ metrics: false, ...scheduling }), JobsModule],
  });
  started.push(node);
  return Object.assign(node, { scheduler: node.app.get(ScheduledJobsService) });
};

const rows = (code: string) =>
  database.sql<{ runKey: string; status: JobSchedulerStatus; ownerId: string; data: unknown }>(
    `SELECT "runKey", status, "ownerId", data FROM "job-scheduler" WHERE code = $1 ORDER BY "runKey"`,
    [code],
  );

describe('SchedulingModule on PostgreSQL', () => {
  it('three applications run each occurrence once (manual clock, real lease)', async () => {
    const clock = new FixedClock(new Date('2026-10-24T22:59:00Z'));
    const timers = ['a', 'b', 'c'].map(() => new ManualTimers(clock));
    const nodes = await Promise.all(['a', 'b', 'c'].map((name, index) => schedulingNode(name, [HourlyDigestJob], { timers: timers[index] })));
    // Through the night clocks go back in Paris: 01:00, 02:00 (twice), 03:00 local.
    for (let hour = 0; hour < 4; hour++) {
      // Each hour another instance is the first to reach the instant; the others reach it on time too.
      await timers[hour % 3].advance(hour === 0 ? 60_000 : 60 * 60_000);
      for (const other of timers) await other.advance(0);
      for (const node of nodes) await node.scheduler.idle();
    }
    expect(seen.map((entry) => entry.execution.scheduledAt.toISOString())).toEqual([
      '2026-10-24T23:00:00.000Z',
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T02:00:00.000Z',
    ]);
    const outcomes = nodes.flatMap((node) => node.scheduler.runs.map((run) => run.outcome));
    expect(outcomes.filter((outcome) => outcome === 'succeeded')).toHaveLength(4);
    expect(outcomes.filter((outcome) => outcome === 'skipped-locked')).toHaveLength(8);
    const table = await rows('reports.hourly-digest');
    expect(table.map((row) => [row.runKey, row.status])).toEqual(seen.map((entry) => [entry.execution.scheduledAt.toISOString(), 'SUCCESS']));
    expect(new Set(seen.map((entry) => entry.execution.idempotencyKey)).size).toBe(4);
  });

  it('with real timers, two applications never run an occurrence twice', async () => {
    const nodes = await Promise.all(['x', 'y'].map((name) => schedulingNode(name, [EverySecondJob], {})));
    await sleep(3_500);
    await Promise.all(nodes.map((node) => node.close()));
    started.length = 0;
    const instants = seen.map((entry) => entry.execution.scheduledAt.getTime());
    expect(instants.length).toBeGreaterThanOrEqual(1);
    expect(new Set(instants).size).toBe(instants.length);
    for (const instant of instants) expect(instant % 1000).toBe(0);
    const table = await rows('health.every-second');
    expect(table.filter((row) => row.status === 'SUCCESS')).toHaveLength(instants.length);
  });

  it('detects occurrences missed while every instance was down, across a restart', async () => {
    const clock = new FixedClock(new Date('2026-01-01T06:59:00Z'));
    const firstTimers = new ManualTimers(clock);
    const first = await schedulingNode('first', [HourlyDigestJob], { timers: firstTimers });
    await firstTimers.advance(60_000);
    await first.scheduler.idle();
    await first.close();
    started.length = 0;
    clock.set(new Date('2026-01-01T10:30:00Z'));
    const [second, third] = await Promise.all(['second', 'third'].map((name) => schedulingNode(name, [HourlyDigestJob], { timers: new ManualTimers(clock) })));
    const missed = [...second.scheduler.runs, ...third.scheduler.runs].filter((run) => run.outcome === 'missed');
    expect(missed.map((run) => run.scheduledAt.toISOString())).toEqual(['2026-01-01T08:00:00.000Z', '2026-01-01T09:00:00.000Z', '2026-01-01T10:00:00.000Z']);
    const table = await rows('reports.hourly-digest');
    const marker = table.find((row) => row.runKey === '2026-01-01T10:00:00.000Z');
    expect(marker).toMatchObject({ status: 'FAIL', data: { outcome: 'missed', missed: 3 } });
  });

  it('times a run out: signal aborted, failed with JOB_TIMEOUT, FAIL in the table, slot freed', async () => {
    const clock = new FixedClock(0);
    const timers = new ManualTimers(clock);
    let release!: () => void;
    gate = new Promise((resolve) => (release = resolve));
    const node = await schedulingNode('solo', [SlowExportJob], { timers });
    await timers.advance(60_000);
    expect(seen).toHaveLength(1);
    await timers.advance(20_000);
    expect(seen[0].execution.signal.aborted).toBe(true);
    expect(seen[0].execution.signal.reason).toMatchObject({ code: 'JOB_TIMEOUT' });
    expect(node.scheduler.runs.map((run) => [run.outcome, run.errorCode])).toEqual([['failed', 'JOB_TIMEOUT']]);
    expect((await rows('reports.slow-export'))[0]).toMatchObject({ status: 'FAIL', data: { error: { name: 'JobTimeoutError' } } });
    await timers.advance(40_000);
    expect(seen).toHaveLength(2);
    release();
    await node.scheduler.idle();
  });

  it('skips an occurrence due while the previous run goes on', async () => {
    const timers = new ManualTimers(new FixedClock(0));
    let release!: () => void;
    gate = new Promise((resolve) => (release = resolve));
    const node = await schedulingNode('solo', [SlowExportJob], { timers, settings: { 'reports.slow-export': { schedule: { every: '10s' } } } });
    await timers.advance(10_000);
    await timers.advance(10_000);
    expect(node.scheduler.runs.map((run) => run.outcome)).toEqual(['skipped-overlap']);
    release();
    await node.scheduler.idle();
    expect(node.scheduler.runs.map((run) => run.outcome)).toEqual(['skipped-overlap', 'succeeded']);
  });

  it('runs a per-tenant job once per tenant across instances, one tenant failing alone', async () => {
    const clock = new FixedClock(0);
    const tenants = { listTenants: async () => ['acme', 'globex', 'initech'] };
    const timers = [new ManualTimers(clock), new ManualTimers(clock)];
    const nodes = await Promise.all(['p', 'q'].map((name, index) => schedulingNode(name, [InvoiceTenantsJob], { timers: timers[index], tenants })));
    await timers[0].advance(60_000);
    await timers[1].advance(0);
    await Promise.all(nodes.map((node) => node.scheduler.idle()));
    expect(seen.map((entry) => entry.execution.tenantId).sort()).toEqual(['acme', 'initech']);
    const table = await rows('billing.invoice-tenants');
    expect(table.map((row) => [row.runKey, row.status])).toEqual([
      ['1970-01-01T00:01:00.000Z tenant=acme', 'SUCCESS'],
      ['1970-01-01T00:01:00.000Z tenant=globex', 'FAIL'],
      ['1970-01-01T00:01:00.000Z tenant=initech', 'SUCCESS'],
    ]);
    const keys = new Set(seen.map((entry) => entry.execution.idempotencyKey));
    expect(keys.size).toBe(2);
  });

  it('finds the tenants through a TENANT_DIRECTORY provider, and gives each run its own scope', async () => {
    const timers = new ManualTimers(new FixedClock(0));
    const node = await schedulingNode('scoped', [InvoiceTenantsJob], { timers }, {}, [
      { provide: TENANT_DIRECTORY, useValue: { listTenants: () => ['acme', 'initech'] } },
    ]);
    await timers.advance(60_000);
    await node.scheduler.idle();
    // Tenants run concurrently, from a random offset: compare them in the directory's order.
    const byTenant = [...seen].sort((x, y) => String(x.execution.tenantId).localeCompare(String(y.execution.tenantId)));
    expect(byTenant.map((entry) => [entry.execution.tenantId, entry.scope?.tenantId, entry.scope?.correlationId === entry.execution.correlationId])).toEqual([
      ['acme', 'acme', true],
      ['initech', 'initech', true],
    ]);
    await expect(schedulingNode('lonely', [InvoiceTenantsJob], { timers: new ManualTimers() })).rejects.toMatchObject({
      code: 'NO_TENANT_DIRECTORY',
    });
  });

  it('start: false registers jobs without timers; runNow still runs one with scheduledAt = now', async () => {
    const clock = new FixedClock(new Date('2026-01-10T09:00:07Z'));
    const timers = new ManualTimers(clock);
    const node = await schedulingNode('api', [HourlyDigestJob], { start: false, timers });
    expect(timers.pending).toEqual([]);
    const [record] = await node.scheduler.runNow('reports.hourly-digest');
    expect(record).toMatchObject({ outcome: 'succeeded', trigger: 'run-now' });
    expect(seen[0].execution.scheduledAt.toISOString()).toBe('2026-01-10T09:00:07.000Z');
    await expect(node.scheduler.runNow('reports.nothing')).rejects.toMatchObject({ code: 'UNKNOWN_JOB' });
    expect(node.scheduler.jobNames).toEqual(['reports.hourly-digest']);
  });

  it('applies settings by job name, and refuses settings for an undeclared job at boot', async () => {
    const timers = new ManualTimers(new FixedClock(0));
    await schedulingNode('cfg', [HourlyDigestJob, EverySecondJob], {
      timers,
      settings: { 'health.every-second': { enabled: false }, 'reports.hourly-digest': { schedule: { every: '5m' } } },
    });
    // The take-over scan's timer (every 30 s), the job's (its claim, claimAheadMs = 2 s before its
    // instant, staggered by up to MAX_CLAIM_STAGGER_MS), and retention's (on by default, every hour).
    const [scan, claim, retention] = timers.pending;
    expect([scan, retention]).toEqual([30_000, 60 * 60_000]);
    expect(claim).toBeGreaterThanOrEqual(5 * 60_000 - 2_000);
    expect(claim).toBeLessThan(5 * 60_000 - 2_000 + MAX_CLAIM_STAGGER_MS);
    expect(timers.pending).toHaveLength(3);
    await expect(
      schedulingNode('stale', [HourlyDigestJob], { timers: new ManualTimers(), settings: { 'reports.renamed-job': { enabled: true } } }),
    ).rejects.toMatchObject({ code: 'UNKNOWN_JOB' });
    await expect(
      schedulingNode('bad', [HourlyDigestJob], { timers: new ManualTimers(), settings: { 'reports.hourly-digest': { schedule: { cron: '0 0 30 2 *' } } } }),
    ).rejects.toMatchObject({ code: 'DECLARATION_ERROR', jobName: 'reports.hourly-digest' });
  });

  it('fails at boot when two providers declare the same job name', async () => {
    @Scheduled('reports.hourly-digest', { every: '1h' })
    class SameNameJob {
      run() {}
    }
    await expect(schedulingNode('dup', [HourlyDigestJob, SameNameJob], { timers: new ManualTimers() })).rejects.toMatchObject({
      code: 'DUPLICATE_JOB',
    });
  });

  it('counts outcomes in prom-client: scheduled_job_runs_total{job,outcome}', async () => {
    const registry = new Registry();
    const clock = new FixedClock(0);
    const timers = [new ManualTimers(clock), new ManualTimers(clock)];
    await Promise.all(
      ['m', 'n'].map((name, index) =>
        schedulingNode(name, [HourlyDigestJob], {
          timers: timers[index],
          metrics: { registry },
          settings: { 'reports.hourly-digest': { schedule: { every: '1m' } } },
        }),
      ),
    );
    await timers[0].advance(60_000);
    await timers[1].advance(0);
    const metrics = await registry.getMetricsAsJSON();
    const runs = metrics.find((metric) => metric.name === 'scheduled_job_runs_total');
    expect(runs?.values.map((value) => [value.labels.outcome, value.value]).sort()).toEqual([
      ['skipped-locked', 1],
      ['succeeded', 1],
    ]);
    expect(metrics.map((metric) => metric.name)).toEqual(
      expect.arrayContaining(['scheduled_job_duration_seconds', 'scheduled_job_last_success_timestamp_seconds']),
    );
  });

  it('on shutdown aborts the running job and releases its lease', async () => {
    const timers = new ManualTimers(new FixedClock(0));
    gate = new Promise(() => undefined); // never opens
    const node = await schedulingNode('leaving', [SlowExportJob], { timers, shutdownGraceMs: 100 }, { shutdownGraceMs: 100 });
    await timers.advance(60_000);
    expect(seen).toHaveLength(1);
    const closing = node.close();
    await timers.advance(100);
    await closing;
    started.length = 0;
    expect(seen[0].execution.signal.aborted).toBe(true);
    expect((await rows('reports.slow-export'))[0]).toMatchObject({ status: 'FAIL', data: { released: true, reason: 'shutdown' } });
  });
});
