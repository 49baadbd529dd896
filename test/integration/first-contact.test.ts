import { Injectable } from '@nestjs/common';
import { type JobExecution, JobLeaseDatabaseError, JobSchedulerModule, Scheduled, SchedulingError, SchedulingModule } from '../../src/features';
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
  it('a lease used before its table exists names the migrations to run', async () => {
    const bare = await createTestDatabase({ migrate: false });
    try {
      const node = await startNestNode(bare.url);
      try {
        const error = await node.jobs.runExclusive({ code: 'first', runKey: 'r' }, async () => 'never').catch((thrown: unknown) => thrown);
        expect(error).toBeInstanceOf(JobLeaseDatabaseError);
        expect((error as Error).message).toMatch(/run the package's migrations first \(migrations: \[\.\.\.JobSchedulerMigrations\]/);
      } finally {
        await node.close();
      }
    } finally {
      await bare.drop();
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
    expect((error as Error).message).toMatch(
      /SchedulingModule is imported 2 times with different options: import SchedulingModule\.forRoot\(…\) once, in the root module/,
    );
  });

  it('JobSchedulerModule imported twice with different options says to import it once', async () => {
    const error = await bootError({ imports: [JobSchedulerModule.forRoot({ nodeId: 'second' })] });
    expect((error as Error).message).toMatch(/JobSchedulerModule is imported 2 times with different options: import JobSchedulerModule\.forRoot\(…\) once/);
  });
});
