import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(__dirname, '../..');
const tsc = join(root, 'node_modules/typescript/bin/tsc');

/** The public surface of @sdcorejs/nestjs/features, as documented. */
const DOCUMENTED_VALUES = [
  'DEFAULT_HEARTBEAT_MS',
  'DEFAULT_LEASE_MS',
  'InvalidJobIdentityOptionsError',
  'InvalidJobLeaseOptionsError',
  'JobScheduler',
  'JobSchedulerModule',
  'JobSchedulerService',
  'JobSchedulerStatus',
  'JobSchedulerType',
  'LostJobLeaseError',
  'Scheduled',
  'SchedulingModule',
  'ScheduledJobsService',
  'DeclarationError',
];

describe('the published package', () => {
  let consumer: string;

  beforeAll(() => {
    execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'pipe' });
    consumer = mkdtempSync(join(tmpdir(), 'sdcorejs-consumer-'));
    mkdirSync(join(consumer, 'node_modules/@sdcorejs'), { recursive: true });
    symlinkSync(root, join(consumer, 'node_modules/@sdcorejs/nestjs'), 'dir');
  }, 120_000);

  afterAll(() => {
    rmSync(consumer, { recursive: true, force: true });
  });

  it("resolves require('@sdcorejs/nestjs/features') and its testing subpath from a consumer", () => {
    const script = `
      const features = require('@sdcorejs/nestjs/features');
      const testing = require('@sdcorejs/nestjs/features/testing');
      process.stdout.write(JSON.stringify({ features: Object.keys(features), testing: Object.keys(testing),
        lease: features.DEFAULT_LEASE_MS, heartbeat: features.DEFAULT_HEARTBEAT_MS, status: features.JobSchedulerStatus }));`;
    const output = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: consumer, encoding: 'utf8' }));
    expect(output.features).toEqual(expect.arrayContaining(DOCUMENTED_VALUES));
    expect(output.testing).toEqual(expect.arrayContaining(['ManualJobScheduler', 'FixedClock', 'InMemoryJobLease', 'ManualTimers']));
    expect(output).toMatchObject({ lease: 900_000, heartbeat: 60_000, status: { RUNNING: 'RUNNING', SUCCESS: 'SUCCESS', FAIL: 'FAIL' } });
  });

  it('gives TypeScript consumers every documented type (moduleResolution node16)', () => {
    writeFileSync(
      join(consumer, 'consumer.ts'),
      `import {
        JobAcquireOptions, JobAcquireResult, JobLease, JobExecutionLease, RunExclusiveResult,
        JobSchedulerModuleOptions, JobSchedulerService, JobSchedulerType, LostJobLeaseError,
        InvalidJobLeaseOptionsError, InvalidJobIdentityOptionsError, JobScheduler, JobSchedulerStatus,
        DEFAULT_LEASE_MS, DEFAULT_HEARTBEAT_MS, JobSchedulerModule, ScheduledJob, JobExecution,
      } from '@sdcorejs/nestjs/features';
      import { ManualJobScheduler } from '@sdcorejs/nestjs/features/testing';
      const options: JobAcquireOptions = { code: 'c', runKey: 'r', type: JobSchedulerType.SCHEDULE, leaseMs: DEFAULT_LEASE_MS, heartbeatMs: DEFAULT_HEARTBEAT_MS };
      const settings: JobSchedulerModuleOptions = { global: true };
      export const use = async (jobs: JobSchedulerService): Promise<RunExclusiveResult<number>> => {
        const lock: JobAcquireResult = await jobs.acquire(options);
        if (lock.acquired) { const lease: JobLease = { id: lock.id, ownerToken: lock.ownerToken }; await jobs.complete(lease); }
        else { const none: undefined = lock.id; void none; }
        return jobs.runExclusive(options, async (lease: JobExecutionLease) => lease.idempotencyKey.length);
      };
      export const all = [LostJobLeaseError, InvalidJobLeaseOptionsError, InvalidJobIdentityOptionsError, JobScheduler, JobSchedulerStatus, JobSchedulerModule.forRoot(settings), ManualJobScheduler];
      export type Job = ScheduledJob & { last?: JobExecution };
      `,
    );
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, module: 'node16', moduleResolution: 'node16', target: 'ES2022', noEmit: true, skipLibCheck: true, experimentalDecorators: true, types: [] },
        files: ['consumer.ts'],
      }),
    );
    execFileSync(process.execPath, [tsc, '-p', join(consumer, 'tsconfig.json')], { cwd: consumer, stdio: 'pipe' });
  });
});
