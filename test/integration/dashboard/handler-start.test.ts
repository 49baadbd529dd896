import 'reflect-metadata';
import { type DynamicModule, type INestApplication, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  type JobExecution,
  JobScheduler,
  JobSchedulerModule,
  Scheduled,
  ScheduledJobsService,
  SchedulingModule,
  TENANT_DIRECTORY,
} from '../../../src/features';
import { JobSchedulerDashboardModule } from '../../../src/features/dashboard';
import { sleep } from '../../support/lease-nodes';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';
import { call, READER, testAuthorize } from './dashboard-app';

/**
 * The handler's start, recorded: a scheduler on system timers records how long each handler ran
 * (data.handlerMs, its monotonic clock), and the dashboard shows the handler's start as
 * finishedAt - handlerMs (the database's clock) apart from the claim. Runs that end together are
 * completed by one statement, each row with its own handlerMs.
 */
let database: TestDatabase;
let app: INestApplication;
let url: string;

const EVERY_MS = 4_000;

/** What the handlers measured of their own run, by job, tenant and due instant. */
const observed = new Map<string, number>();
const keyOf = (job: string, scheduledAt: number, tenantId?: string): string => `${job} ${tenantId ?? '-'} ${new Date(scheduledAt).toISOString()}`;

@Scheduled('reports.slow-digest', { every: `${EVERY_MS / 1000}s`, leaseMs: 60_000 })
class SlowDigestJob {
  async run(execution: JobExecution): Promise<void> {
    const start = performance.now();
    await sleep(300);
    observed.set(keyOf('reports.slow-digest', execution.scheduledAt.getTime()), performance.now() - start);
  }
}

/**
 * Three tenants, two at a time: the first to enter returns after 300 ms and frees its slot for the
 * third, which starts then; the second and third wait for the same instant (one promise), so they
 * end in one turn (their completes share a statement) after different run times.
 */
const entered = new Map<number, number>();
const gates = new Map<number, Promise<void>>();
@Scheduled('billing.tenant-close', { every: `${EVERY_MS / 1000}s`, leaseMs: 60_000, tenancy: 'per-tenant', tenantConcurrency: 2 })
class TenantCloseJob {
  async run(execution: JobExecution): Promise<void> {
    const start = performance.now();
    const due = execution.scheduledAt.getTime();
    const order = (entered.get(due) ?? 0) + 1;
    entered.set(due, order);
    if (order === 1) await sleep(300);
    else {
      let gate = gates.get(due);
      if (!gate) gates.set(due, (gate = sleep(1_000)));
      await gate;
    }
    observed.set(keyOf('billing.tenant-close', due, execution.tenantId), performance.now() - start);
  }
}

beforeAll(async () => {
  database = await createTestDatabase();
  @Module({ providers: [SlowDigestJob, TenantCloseJob, { provide: TENANT_DIRECTORY, useValue: { listTenants: () => ['acme', 'globex', 'initech'] } }] })
  class JobsModule {}
  class HandlerStartModule {}
  const root: DynamicModule = {
    module: HandlerStartModule,
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url: database.url, entities: [JobScheduler], poolSize: 4 }),
      JobSchedulerModule.forRoot({ nodeId: 'handler-start' }),
      SchedulingModule.forRoot({ metrics: false, retention: false }),
      JobsModule,
      JobSchedulerDashboardModule.forRoot({ path: '/jobs', authorize: testAuthorize }),
    ],
  };
  app = await NestFactory.create<INestApplication>(root, new ExpressAdapter(), { logger: false, abortOnError: false });
  await app.listen(0, '127.0.0.1');
  url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
});

afterAll(async () => {
  await app?.close();
  await database.drop();
});

interface Row {
  id: string;
  code: string;
  runKey: string;
  status: string;
  data: { handlerMs?: number } | null;
  /** finishedAt to the microsecond: rows finalized by one statement share it (CURRENT_TIMESTAMP is the transaction's start). */
  finishedExact: string;
}

/** The rows of the first occurrence whose runs all finished (both jobs, every tenant), waited for. */
const firstFinishedOccurrence = async (): Promise<Row[]> => {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const rows = await database.sql<Row>(
      `SELECT id, code, "runKey", status::text AS status, data,
              to_char("finishedAt" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS "finishedExact"
       FROM "job-scheduler" WHERE "finishedAt" IS NOT NULL ORDER BY "runKey"`,
    );
    const byInstant = new Map<string, Row[]>();
    for (const row of rows) {
      const instant = /\d{4}-\d{2}-\d{2}T[\d:.]+Z/.exec(row.runKey)?.[0] ?? row.runKey;
      byInstant.set(instant, [...(byInstant.get(instant) ?? []), row]);
    }
    const complete = [...byInstant.values()].find((group) => group.length === 4);
    if (complete) return complete;
    if (Date.now() > deadline) throw new Error(`no occurrence finished all its runs within 30 s: ${JSON.stringify(rows)}`);
    await sleep(200);
  }
};

describe("the handler's start, recorded by the scheduler and shown by the dashboard", () => {
  jest.setTimeout(60_000);

  it('records handlerMs with each run; the run detail shows the handler start between the claim and the finish', async () => {
    const rows = await firstFinishedOccurrence();
    await app.get(ScheduledJobsService).idle();
    const slow = rows.find((row) => row.code === 'reports.slow-digest');
    expect(slow).toMatchObject({ status: 'SUCCESS', data: { handlerMs: expect.any(Number) } });
    const handlerMs = slow!.data!.handlerMs!;
    expect(Number.isInteger(handlerMs)).toBe(true);
    expect(handlerMs).toBeGreaterThanOrEqual(250);
    // What the handler measured of itself, and what was recorded: the same run time (generously).
    const due = Date.parse(slow!.runKey);
    const ranMs = observed.get(keyOf('reports.slow-digest', due));
    expect(ranMs).toBeDefined();
    expect(Math.abs(handlerMs - ranMs!)).toBeLessThan(250);

    const detail = await call({ url } as never, `/jobs/api/runs/${slow!.id}`, { headers: { authorization: READER } });
    expect(detail.status).toBe(200);
    const run = detail.json as { startedAt: string; claimedAt: string; finishedAt: string; dueAt: string; data: unknown; error: unknown };
    expect(run.error).toBeNull();
    expect(run.data).toEqual({ handlerMs });
    expect(Date.parse(run.dueAt)).toBe(due);
    const [started, claimed, finished] = [run.startedAt, run.claimedAt, run.finishedAt].map((instant) => Date.parse(instant));
    expect(started).not.toBeNaN();
    expect(claimed).not.toBeNaN();
    // The claim comes first (ahead of the due instant, by default), the handler starts after it and
    // not before its due instant (one machine, one clock: a generous second for rounding and drift).
    expect(started).toBeGreaterThanOrEqual(claimed);
    expect(started).toBeLessThanOrEqual(finished);
    expect(started).toBeGreaterThanOrEqual(due - 1_000);
    expect(finished - started).toBe(handlerMs);

    // The runs list says the same.
    const list = await call({ url } as never, `/jobs/api/runs?code=reports.slow-digest`, { headers: { authorization: READER } });
    const listed = (list.json as { runs: { id: string; startedAt: string | null; claimedAt: string | null }[] }).runs.find((entry) => entry.id === slow!.id);
    expect(listed).toMatchObject({ startedAt: run.startedAt, claimedAt: run.claimedAt });
  });

  it('completes the runs that end together in one statement, each row with its own handlerMs', async () => {
    const rows = (await firstFinishedOccurrence()).filter((row) => row.code === 'billing.tenant-close');
    expect(rows.map((row) => row.status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
    const byTenant = new Map(rows.map((row) => [/ tenant=(\S+)/.exec(row.runKey)?.[1] ?? row.runKey, row]));
    const tenants = [...byTenant.keys()].sort();
    expect(tenants).toHaveLength(3);
    // Each row's handlerMs is its own handler's run time (what the handler measured of itself).
    for (const tenant of tenants) {
      const row = byTenant.get(tenant)!;
      const ranMs = observed.get(keyOf('billing.tenant-close', Date.parse(row.runKey.split(' ')[0]), tenant));
      expect(ranMs).toBeDefined();
      expect(Math.abs(row.data!.handlerMs! - ranMs!)).toBeLessThan(250);
    }
    // The two that waited for the same instant ended in one turn: finalized by one statement (the
    // same CURRENT_TIMESTAMP to the microsecond), yet one ran about 1,000 ms and the other about
    // 700 ms (it started when the first tenant's 300 ms run freed its slot).
    const gated = rows.filter((row) => row.data!.handlerMs! >= 500).sort((x, y) => x.data!.handlerMs! - y.data!.handlerMs!);
    expect(gated).toHaveLength(2);
    expect(gated[0].finishedExact).toBe(gated[1].finishedExact);
    expect(gated[1].data!.handlerMs! - gated[0].data!.handlerMs!).toBeGreaterThanOrEqual(150);
  });
});
