import { Injectable, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, Interval, ScheduleModule, Timeout } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  currentJobExecution,
  type JobExecution,
  JobScheduler,
  JobSchedulerType,
  JobSchedulerModule,
  JobSchedulerService,
  RunOnce,
  RunOnceError,
  RunOnceModule,
  Scheduled,
} from '../../../src/features';
import { RunOnceExplorer } from '../../../src/features/integrations/nest-schedule/run-once.explorer';
import { type NestNode, startNestNode } from '../../support/nest-node';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

/**
 * @RunOnce in one process: what a tick does (the lease it takes, the execution it gives the
 * method, errors, an unreachable database) and what refuses to boot. The ticks are called by
 * hand here: a call is a tick, named by the latest due instant of the hourly cron. Three
 * applications in separate processes, on real @nestjs/schedule timers: test/proofs/nest-schedule/run-once-processes.test.ts.
 */
let database: TestDatabase;
const nodes: NestNode[] = [];
const HOUR = 3_600_000;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((node) => node.close()));
  await database.sql('DELETE FROM "job-scheduler"');
  jest.restoreAllMocks();
});
afterAll(async () => {
  await database.drop();
});

const seen: { execution: JobExecution | undefined; self: unknown; args: unknown[] }[] = [];

@Injectable()
class HourlyReport {
  calls = 0;

  @Cron('0 0 * * * *', { timeZone: 'Europe/Paris' })
  @RunOnce({ leaseMs: 30_000 })
  async build(...args: unknown[]): Promise<string> {
    this.calls++;
    seen.push({ execution: currentJobExecution(), self: this, args });
    return 'built';
  }

  @RunOnce('reports.failing')
  @Cron('0 0 * * * *')
  async failing(): Promise<void> {
    this.calls++;
    throw new Error('boom');
  }

  @Cron('0 0 * * * *')
  @RunOnce('reports.failing-logged', { errors: 'log' })
  async failingLogged(): Promise<void> {
    this.calls++;
    throw new Error('logged boom');
  }
}

/** The ticks are called by hand: @nestjs/schedule's module is there (RunOnceModule requires it), its crons do not start. */
const handTicked = () => ScheduleModule.forRoot({ cronJobs: false });

const startNode = (providers: unknown[] = [HourlyReport], runOnce = RunOnceModule.forRoot()) =>
  startNestNode(database.url, { imports: [handTicked(), runOnce], providers: providers as never[] }).then((node) => {
    nodes.push(node);
    return node;
  });

const leaseRows = (code: string) =>
  database.sql<{ status: string; runKey: string; lockKey: string; fencingToken: string; name: string; leaseMs: number; data: unknown; attempts: number }>(
    `SELECT status, "runKey", "lockKey", "fencingToken", name, "leaseMs", data, attempts FROM "job-scheduler" WHERE code = $1 ORDER BY "runKey"`,
    [code],
  );

describe('a tick', () => {
  it('runs on one of two applications, with its execution; the other skips', async () => {
    seen.length = 0;
    const [first, second] = [await startNode(), await startNode()];
    const before = Math.floor(Date.now() / HOUR) * HOUR;
    const results = await Promise.all([first, second].map((node) => node.app.get(HourlyReport).build('arg')));
    const reports = [first, second].map((node) => node.app.get(HourlyReport));

    expect(results.sort()).toEqual(['built', undefined].sort());
    expect(reports[0].calls + reports[1].calls).toBe(1);
    const [row] = await leaseRows('hourly-report.build');
    expect(row).toMatchObject({ status: 'SUCCESS', name: 'HourlyReport.build', leaseMs: 30_000, attempts: 1 });
    // How long the method ran (the dashboard shows its start as finishedAt - handlerMs).
    expect(row.data).toEqual({ handlerMs: expect.any(Number) });
    // The due instant of the hourly cron (Paris is a whole number of hours from UTC).
    const scheduledAt = new Date(Math.floor(Date.now() / HOUR) * HOUR);
    expect([new Date(before).toISOString(), scheduledAt.toISOString()]).toContain(row.runKey);

    expect(seen).toHaveLength(1);
    const { execution, self, args } = seen[0];
    expect(self).toBe(reports.find((report) => report.calls === 1));
    expect(args).toEqual(['arg']);
    expect(execution).toMatchObject({
      name: 'hourly-report.build',
      scheduledAt: new Date(row.runKey),
      idempotencyKey: row.lockKey,
      fencingToken: Number(row.fencingToken),
      trigger: 'schedule',
      correlationId: expect.any(String),
    });
    expect(execution?.signal).toBeInstanceOf(AbortSignal);
    expect(execution?.signal.aborted).toBe(false);
    expect(execution?.startedAt.getTime()).toBeGreaterThanOrEqual(execution?.scheduledAt.getTime() as number);

    // The same tick again, on either: done.
    await expect(first.app.get(HourlyReport).build()).resolves.toBeUndefined();
    expect(reports[0].calls + reports[1].calls).toBe(1);
  });

  it("rethrows the method's error by default, after recording FAIL; no instance takes the failed tick over", async () => {
    const [first, second] = [await startNode(), await startNode()];
    await expect(first.app.get(HourlyReport).failing()).rejects.toThrow('boom');
    const [row] = await leaseRows('reports.failing');
    expect(row).toMatchObject({ status: 'FAIL', data: { error: { name: 'Error', message: 'boom' }, handlerMs: expect.any(Number) } });
    await expect(second.app.get(HourlyReport).failing()).resolves.toBeUndefined();
    expect(second.app.get(HourlyReport).calls).toBe(0);
    expect(await leaseRows('reports.failing')).toEqual([row]);
  });

  it("with errors: 'log', logs the method's error and resolves", async () => {
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const node = await startNode();
    await expect(node.app.get(HourlyReport).failingLogged()).resolves.toBeUndefined();
    const [row] = await leaseRows('reports.failing-logged');
    expect(row.status).toBe('FAIL');
    expect(errors).toHaveBeenCalledWith(`reports.failing-logged ${row.runKey} failed: Error: logged boom`, expect.stringContaining('logged boom'));
  });

  it('the module-wide error policy applies to methods that name none', async () => {
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const node = await startNode([HourlyReport], RunOnceModule.forRoot({ errors: 'log' }));
    await expect(node.app.get(HourlyReport).failing()).resolves.toBeUndefined();
    expect((await leaseRows('reports.failing'))[0].status).toBe('FAIL');
  });

  it('when the database cannot be reached, logs an error and skips: the method never runs without its lease', async () => {
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const node = await startNode();
    await node.dataSource.destroy();
    await expect(node.app.get(HourlyReport).build()).resolves.toBeUndefined();
    expect(node.app.get(HourlyReport).calls).toBe(0);
    expect(errors).toHaveBeenCalledWith(expect.stringMatching(/^hourly-report\.build \S+Z: could not take the lease, skipped: /), undefined);
  });
});

describe('boot', () => {
  const bootFails = async (providers: unknown[], withLease = true, withSchedule = true): Promise<unknown> => {
    class Root {}
    const imports = [
      TypeOrmModule.forRoot({ type: 'postgres', url: database.url, entities: [JobScheduler], poolSize: 1 }),
      ...(withLease ? [JobSchedulerModule.forRoot()] : []),
      ...(withSchedule ? [handTicked()] : []),
      RunOnceModule.forRoot(),
    ];
    Module({ imports, providers: providers as never[] })(Root);
    try {
      const app = await NestFactory.createApplicationContext(Root, { logger: false, abortOnError: false });
      await app.close();
    } catch (error) {
      return error;
    }
    throw new Error('the application booted');
  };

  it('refuses a @RunOnce method without @Cron', async () => {
    @Injectable()
    class Plain {
      @RunOnce()
      async tick(): Promise<void> {}
    }
    const error = await bootFails([Plain]);
    expect(error).toBeInstanceOf(RunOnceError);
    expect(error).toMatchObject({
      code: 'NOT_A_CRON',
      method: 'Plain.tick',
      message:
        '@RunOnce on Plain.tick: the method is not a @Cron method of @nestjs/schedule. @RunOnce names each tick by the instant its cron expression made it due; put @Cron(...) on the method too',
    });
  });

  it('refuses an @Interval, pointing to @Scheduled({ every })', async () => {
    @Injectable()
    class Poller {
      @Interval(2_000)
      @RunOnce()
      async poll(): Promise<void> {}
    }
    expect(await bootFails([Poller])).toMatchObject({
      code: 'NOT_ALIGNED',
      message: expect.stringMatching(
        /^@RunOnce on Poller\.poll: @Interval is not supported\. @Interval counts from the start of each process.*@Scheduled\('<context>\.<job-name>', \{ every: \.\.\. \}\)/,
      ),
    });
  });

  it('refuses a @Timeout likewise', async () => {
    @Injectable()
    class Warmup {
      @RunOnce()
      @Timeout(1_000)
      async warm(): Promise<void> {}
    }
    expect(await bootFails([Warmup])).toMatchObject({ code: 'NOT_ALIGNED', message: expect.stringContaining('@Scheduled(') });
  });

  it('refuses one name on two methods, and the name of a @Scheduled job', async () => {
    @Injectable()
    class First {
      @Cron('0 * * * * *')
      @RunOnce('orders.sync')
      async sync(): Promise<void> {}
    }
    @Injectable()
    class Second {
      @Cron('30 * * * * *')
      @RunOnce('orders.sync')
      async sync(): Promise<void> {}
    }
    @Scheduled('orders.sync', { every: '1m' })
    class Declared {
      run(): void {}
    }
    expect(await bootFails([First, Second])).toMatchObject({
      code: 'DUPLICATE_NAME',
      message:
        '@RunOnce name "orders.sync" is used by First.sync and by Second.sync: two methods would share one lease per tick; give one of them another name',
    });
    expect(await bootFails([First, Declared])).toMatchObject({ code: 'DUPLICATE_NAME', message: expect.stringContaining('also the name of a @Scheduled job') });
  });

  it('refuses a cron @nestjs/schedule cannot read, and a missing JobSchedulerModule', async () => {
    @Injectable()
    class Broken {
      @Cron('* * * * *', { timeZone: 'Mars/Olympus' })
      @RunOnce()
      async tick(): Promise<void> {}
    }
    @Injectable()
    class Fine {
      @Cron('* * * * *')
      @RunOnce()
      async tick(): Promise<void> {}
    }
    expect(await bootFails([Broken])).toMatchObject({ code: 'INVALID_CRON', method: 'Broken.tick' });
    expect(await bootFails([Fine], false)).toMatchObject({ code: 'NO_LEASE', message: expect.stringContaining('JobSchedulerModule.forRoot()') });
  });

  it('refuses @RunOnce methods without ScheduleModule.forRoot(), whose crons would never fire, and names the fix', async () => {
    @Injectable()
    class Nightly {
      @Cron('0 3 * * *')
      @RunOnce()
      async tick(): Promise<void> {}
    }
    expect(await bootFails([Nightly], true, false)).toMatchObject({
      name: 'RunOnceError',
      code: 'NO_SCHEDULE_MODULE',
      message: expect.stringContaining("add ScheduleModule.forRoot() to the root module's imports"),
    });
    // Without @RunOnce methods, RunOnceModule asks for nothing.
    const node = await startNestNode(database.url, { imports: [RunOnceModule.forRoot()] });
    nodes.push(node);
  });

  it('refuses RunOnceModule imported twice with different options', async () => {
    class Root {}
    Module({
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: database.url, entities: [JobScheduler], poolSize: 1 }),
        JobSchedulerModule.forRoot(),
        handTicked(),
        RunOnceModule.forRoot(),
        RunOnceModule.forRoot({ errors: 'log' }),
      ],
    })(Root);
    await expect(NestFactory.createApplicationContext(Root, { logger: false, abortOnError: false })).rejects.toMatchObject({
      code: 'DUPLICATE_MODULE',
      message:
        'RunOnceModule is imported 2 times with different options (they differ in "errors"): import RunOnceModule.forRoot(…) once, in the root module, or give every import the same options',
    });
  });

  it('accepts RunOnceModule.forRoot() imported twice with the same options: one module, each tick run once', async () => {
    const node = await startNestNode(database.url, {
      imports: [handTicked(), RunOnceModule.forRoot({ errors: 'log' }), RunOnceModule.forRoot({ errors: 'log' })],
      providers: [HourlyReport],
    });
    nodes.push(node);
    expect(node.app.get(RunOnceExplorer, { strict: false, each: true })).toHaveLength(1);
    await expect(node.app.get(HourlyReport).build()).resolves.toBe('built');
  });

  it('boots with RunOnceModule imported as a class too', async () => {
    const node = await startNode([HourlyReport], RunOnceModule as never);
    expect(node.app.get(JobSchedulerService)).toBeDefined();
    await expect(node.app.get(HourlyReport).build()).resolves.toBe('built');
  });
});

describe('retention of the ticks, on by default', () => {
  it("prunes old ticks' rows of @RunOnce methods, and nothing else", async () => {
    const node = await startNode();
    const aged = async (code: string, runKey: string, days: number) => {
      const lock = await node.jobs.acquire({ code, runKey });
      if (!lock.acquired) throw new Error('expected to acquire');
      await node.jobs.complete(lock);
      await database.sql(`UPDATE "job-scheduler" SET "createdAt" = now() - $1 * interval '1 day', "modifiedAt" = now() - $1 * interval '1 day' WHERE id = $2`, [
        days,
        lock.id,
      ]);
    };
    await aged('reports.failing', '2026-01-01T00:00:00.000Z', 8); // an hourly @RunOnce tick past 7 days: pruned
    await aged('reports.failing', '2026-01-02T00:00:00.000Z', 6); // kept
    await aged('manual.other', '2026-01-01T00:00:00.000Z', 400); // not a @RunOnce method's
    expect(await node.app.get(RunOnceExplorer).pruneTicks()).toBe(1);
    const left = await database.sql<{ code: string; runKey: string }>(
      `SELECT code, "runKey" FROM "job-scheduler" WHERE code <> 'run-once.retention' ORDER BY 1, 2`,
    );
    expect(left).toEqual([
      { code: 'manual.other', runKey: '2026-01-01T00:00:00.000Z' },
      { code: 'reports.failing', runKey: '2026-01-02T00:00:00.000Z' },
    ]);
  });

  it('is switched off with retention: false', async () => {
    const node = await startNode([HourlyReport], RunOnceModule.forRoot({ retention: false }));
    expect(await node.app.get(RunOnceExplorer).pruneTicks()).toBeNull();
  });
});

describe('a tick whose holder vanished', () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const abandonedTick = async (jobs: JobSchedulerService) => {
    const runKey = new Date(Math.floor(Date.now() / HOUR) * HOUR).toISOString();
    // A holder that acquired the tick and died: no heartbeat, no finalization; its 1 s lease runs out.
    const lock = await jobs.acquire({ code: 'hourly-report.build', runKey, leaseMs: 1_000, heartbeatMs: 0, reclaimFailed: false });
    if (!lock.acquired) throw new Error('not acquired');
    return { runKey, lock };
  };
  const waitFor = async (condition: () => Promise<boolean> | boolean) => {
    const deadline = Date.now() + 20_000;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await sleep(100);
    }
  };

  it('is taken over by another instance: the method runs again with the same key and a greater fencing token', async () => {
    seen.length = 0;
    const node = await startNode([HourlyReport], RunOnceModule.forRoot({ takeOverScanMs: 200 }));
    const { runKey, lock } = await abandonedTick(node.jobs);
    await waitFor(async () => (await leaseRows('hourly-report.build'))[0]?.status === 'SUCCESS');
    expect(seen).toHaveLength(1);
    expect(seen[0].execution).toMatchObject({
      name: 'hourly-report.build',
      scheduledAt: new Date(runKey),
      trigger: 'take-over',
      idempotencyKey: lock.idempotencyKey,
    });
    expect(seen[0].execution?.fencingToken).toBeGreaterThan(lock.fencingToken);
    // The default lease of a tick is short (60 s) unless the method names one (30 s here).
    expect((await leaseRows('hourly-report.build'))[0]).toMatchObject({ status: 'SUCCESS', attempts: 2, leaseMs: 30_000 });
  });

  it('that already had maxAttempts owners is ended with JOB_ABANDONED, unrun', async () => {
    seen.length = 0;
    const node = await startNode([HourlyReport], RunOnceModule.forRoot({ takeOverScanMs: 200 }));
    const { runKey } = await abandonedTick(node.jobs);
    await database.sql(`UPDATE "job-scheduler" SET attempts = 3 WHERE "runKey" = $1`, [runKey]);
    await waitFor(async () => (await leaseRows('hourly-report.build'))[0]?.status === 'FAIL');
    expect(seen).toEqual([]);
    expect((await leaseRows('hourly-report.build'))[0]).toMatchObject({ attempts: 3, data: { abandoned: true, error: { code: 'JOB_ABANDONED' } } });
  });
});

@Injectable()
class SlowTick {
  ran = 0;

  @Cron('0 0 * * * *')
  @RunOnce('reports.slow-tick')
  async run(): Promise<void> {
    this.ran++;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('@RunOnce reclaiming an abandoned tick', () => {
  it('a tick that reclaims a row whose holder stopped heartbeating runs with trigger take-over and a greater fencing token', async () => {
    seen.length = 0;
    const node = await startNode();
    const runKey = new Date(Math.floor(Date.now() / HOUR) * HOUR).toISOString();
    // A holder that took this tick's lease and vanished (its row RUNNING, its lease run out).
    const abandoned = await node.jobs.acquire({ code: 'hourly-report.build', runKey, leaseMs: 30_000, type: JobSchedulerType.SCHEDULE, reclaimFailed: false });
    expect(abandoned.acquired).toBe(true);
    await database.sql(`UPDATE "job-scheduler" SET "modifiedAt" = "modifiedAt" - interval '1 day' WHERE code = 'hourly-report.build'`);
    expect(await node.app.get(HourlyReport).build()).toBe('built');
    expect(seen.map(({ execution }) => execution?.trigger)).toEqual(['take-over']);
    expect(seen[0].execution!.fencingToken).toBeGreaterThan((abandoned as { fencingToken: number }).fencingToken);
    expect((await leaseRows('hourly-report.build')).map((row) => [row.status, row.attempts])).toEqual([['SUCCESS', 2]]);
  });
});

describe('@RunOnce on shutdown', () => {
  it.each([1, 5, 10, 20])(
    'app.close() %i ms after a tick fires: the tick runs and is finalized before the DataSource closes, or is handed over and run once by another instance',
    async (delayMs) => {
      const node = await startNestNode(database.url, { imports: [handTicked(), RunOnceModule.forRoot()], providers: [SlowTick] });
      const tick = node.app.get(SlowTick);
      const fired = tick.run();
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      await node.close();
      await fired;
      const [row] = await leaseRows('reports.slow-tick');
      // A tick that fires after shutdown began runs nothing and takes no lease.
      await tick.run();
      expect(tick.ran).toBeLessThanOrEqual(1);
      if (tick.ran === 1) {
        // Ran and completed: never left RUNNING for a second run.
        expect(row.status).toBe('SUCCESS');
        return;
      }
      // Won while shutting down: handed over unrun (RUNNING, lease run out, marked), or not taken at all.
      if (row === undefined) return;
      expect({ status: row.status, data: row.data }).toEqual({ status: 'RUNNING', data: { handedOver: true } });
      const other = await startNestNode(database.url, { imports: [handTicked(), RunOnceModule.forRoot({ takeOverScanMs: 200 })], providers: [SlowTick] });
      nodes.push(other);
      const deadline = Date.now() + 20_000;
      while ((await leaseRows('reports.slow-tick'))[0].status !== 'SUCCESS' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await leaseRows('reports.slow-tick')).map((taken) => [taken.status, taken.attempts])).toEqual([['SUCCESS', 2]]);
      expect(other.app.get(SlowTick).ran).toBe(1);
    },
  );
});
