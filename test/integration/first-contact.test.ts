import { Injectable, Module } from '@nestjs/common';
import {
  DynamicSchedulesModule,
  type JobExecution,
  JobLeaseDatabaseError,
  JobSchedulerModule,
  JobSchedulerSchemaError,
  JobSchedulerService,
  Scheduled,
  ScheduledJobsService,
  SchedulingError,
  SchedulingModule,
} from '../../src/features';
import { startNestNode } from '../support/nest-node';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * What a newcomer meets first: each mistake stops with one sentence that says what to do.
 */
@Scheduled('tenants.nightly-report', { cron: '0 2 * * *', tenancy: 'per-tenant' })
class PerTenantJob {
  async run(_execution: JobExecution) {}
}

@Injectable()
@Scheduled('reports.hourly', { every: '1h' })
class HourlyJob {
  async run(_execution: JobExecution) {}
}

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.drop());

const bootError = async (options: Parameters<typeof startNestNode>[1], url = database.url): Promise<unknown> => {
  try {
    const node = await startNestNode(url, options);
    await node.close();
    return 'booted';
  } catch (error) {
    return error;
  }
};

describe('first contact', () => {
  it('migrations not run: the boot fails once, naming the table, the sequence and the migrations (not an error per tick)', async () => {
    const bare = await createTestDatabase({ migrate: false });
    try {
      const error = await bootError({ imports: [SchedulingModule.forRoot({ metrics: false })], providers: [HourlyJob] }, bare.url);
      expect(error).toBeInstanceOf(JobSchedulerSchemaError);
      expect(error).toMatchObject({
        code: 'JOB_SCHEDULER_SCHEMA_MISSING',
        missing: [
          { role: 'the job-scheduler table', name: '"job-scheduler"', migration: 'CreateJobSchedulerTable1764547200000' },
          { name: '"job-scheduler_fencingToken_seq"', migration: 'AddJobSchedulerFencingTokenSequence1764547200003' },
        ],
      });
      expect((error as Error).message).toBe(
        `The database lacks what the job scheduler needs: the job-scheduler table "job-scheduler" does not exist (migration CreateJobSchedulerTable1764547200000); the job-scheduler table's fencing-token sequence "job-scheduler_fencingToken_seq" does not exist (migration AddJobSchedulerFencingTokenSequence1764547200003). Run the package's migrations before the application starts (migrations: [...JobSchedulerMigrations] in your DataSource, then migration:run, or migrationsRun: true)`,
      );
      // Used without Nest (no boot), a statement still names the migrations.
      const node = new JobSchedulerService(await bare.dataSource({ poolSize: 1 }));
      const thrown = await node.runExclusive({ code: 'first', runKey: 'r' }, async () => 'never').catch((caught: unknown) => caught);
      expect(thrown).toBeInstanceOf(JobLeaseDatabaseError);
      expect((thrown as Error).message).toMatch(
        /^A table or sequence of the job scheduler is missing \(relation "job-scheduler" does not exist\): run the package's migrations first/,
      );
    } finally {
      await bare.drop();
    }
  });

  it('each missing part is named with its own table and migration: a column of a 1.x table, the pause table, the dynamic schedules table', async () => {
    const partial = await createTestDatabase();
    try {
      // A table as 1.x left it: without those columns, nor the triggers of migration 0010 that read "leaseMs".
      await partial.sql('ALTER TABLE "job-scheduler" DROP COLUMN "ownerToken", DROP COLUMN "leaseMs" CASCADE');
      const lease = await bootError({}, partial.url);
      expect(lease).toMatchObject({
        code: 'JOB_SCHEDULER_SCHEMA_MISSING',
        missing: [
          { name: '"job-scheduler"', column: 'ownerToken', migration: 'UpgradeJobSchedulerTableFrom111764547200001' },
          { name: '"job-scheduler"', column: 'leaseMs', migration: 'UpgradeJobSchedulerTableFrom111764547200001' },
        ],
      });
      expect((lease as Error).message).toContain(
        'the job-scheduler table "job-scheduler" has no column "ownerToken" (migration UpgradeJobSchedulerTableFrom111764547200001)',
      );
      await partial.sql('ALTER TABLE "job-scheduler" ADD COLUMN "ownerToken" uuid, ADD COLUMN "leaseMs" integer');

      await partial.sql('DROP TABLE "job-scheduler-pause"');
      const pauses = await bootError({ imports: [SchedulingModule.forRoot({ metrics: false })], providers: [HourlyJob] }, partial.url);
      expect(pauses).toBeInstanceOf(JobSchedulerSchemaError);
      expect((pauses as Error).message).toContain(
        'the pause table "job-scheduler-pause" does not exist (migration AddJobPauseTable1764547200008, or SchedulingModule.forRoot({ pauses: false }) to go without runtime pauses)',
      );
      expect((pauses as Error).message).not.toContain('fencing-token');
      expect(
        await bootError({ imports: [SchedulingModule.forRoot({ metrics: false, pauses: false, start: false })], providers: [HourlyJob] }, partial.url),
      ).toBe('booted');

      await partial.sql('DROP TABLE "job-schedule"');
      const dynamic = await bootError({ imports: [DynamicSchedulesModule.forRoot({ metrics: false })] }, partial.url);
      expect(dynamic).toMatchObject({ code: 'JOB_SCHEDULER_SCHEMA_MISSING', missing: [{ role: 'the dynamic schedules table', name: '"job-schedule"' }] });
      expect((dynamic as Error).message).toContain('the dynamic schedules table "job-schedule" does not exist (migration CreateJobScheduleTable1764547200007)');
    } finally {
      await partial.drop();
    }
  });

  it('a per-tenant job without a tenant directory says how to register one', async () => {
    const error = await bootError({ imports: [SchedulingModule.forRoot({ metrics: false, start: false })], providers: [PerTenantJob] });
    expect(error).toBeInstanceOf(SchedulingError);
    expect(error).toMatchObject({ code: 'NO_TENANT_DIRECTORY' });
    expect((error as Error).message).toMatch(/register a provider \{ provide: TENANT_DIRECTORY, useClass: YourTenants \}/);
  });

  it('settings for an unknown job say to fix the name or declare the job', async () => {
    const error = await bootError({
      imports: [SchedulingModule.forRoot({ metrics: false, start: false, settings: { 'reports.hourlly': { enabled: false } } })],
      providers: [HourlyJob],
    });
    expect(error).toMatchObject({ code: 'UNKNOWN_JOB' });
    expect((error as Error).message).toMatch(/"reports\.hourlly", which no module declares: fix the name, or declare the job/);
  });

  it('SchedulingModule imported twice with different options says to import it once', async () => {
    const error = await bootError({
      imports: [SchedulingModule.forRoot({ metrics: false, start: false }), SchedulingModule.forRoot({ metrics: false, start: false, lateToleranceMs: 5_000 })],
      providers: [HourlyJob],
    });
    expect(error).toMatchObject({ code: 'DUPLICATE_MODULE' });
    expect((error as Error).message).toBe(
      'SchedulingModule is imported 2 times with different options (they differ in "lateToleranceMs"): import SchedulingModule.forRoot(…) once, in the root module (it is global), or give every import the same options',
    );
  });

  it('JobSchedulerModule imported twice with different options names the options that differ, never their values', async () => {
    const error = await bootError({ imports: [JobSchedulerModule.forRoot({ nodeId: 'second-node-secret' })] });
    expect((error as Error).message).toBe(
      'JobSchedulerModule is imported 2 times with different options (they differ in "nodeId"): import JobSchedulerModule.forRoot(…) once, in the root module (it is global), or give every import the same options',
    );
  });

  it('the same forRoot() imported by two feature modules is one module: one lease service, one scheduler, the job registered once', async () => {
    @Module({ imports: [JobSchedulerModule.forRoot(), SchedulingModule.forRoot({ metrics: false, start: false })], providers: [HourlyJob] })
    class ReportsModule {}
    @Module({ imports: [JobSchedulerModule.forRoot(), SchedulingModule.forRoot({ start: false, metrics: false })] })
    class BillingModule {}
    const node = await startNestNode(database.url, { imports: [ReportsModule, BillingModule] });
    try {
      expect(node.app.get(JobSchedulerService, { strict: false, each: true })).toHaveLength(1);
      const schedulers = node.app.get(ScheduledJobsService, { strict: false, each: true });
      expect(schedulers).toHaveLength(1);
      expect(schedulers[0].jobNames).toEqual(['reports.hourly']);
      expect((await schedulers[0].runNow('reports.hourly')).map((record) => record.outcome)).toEqual(['succeeded']);
    } finally {
      await node.close();
    }
  });
});
