import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { type JobExecution, Scheduled, type ScheduledJob, ScheduledJobsService, SchedulingModule } from '../../../src/features';
import { FixedClock, InMemoryJobLease, ManualTimers } from '../../../src/features/testing';
import { escapeLogText } from '../../../src/features/job-scheduler/log-text';
import { captureNestLogs } from '../../support/nest-log-capture';

@Scheduled('billing.close-tenants', { every: '1h', tenancy: 'per-tenant' })
class CloseTenantsJob implements ScheduledJob {
  run(execution: JobExecution): Promise<void> {
    return Promise.reject(new Error(`ledger of ${String(execution.tenantId)} is locked\nsee the runbook`));
  }
}

@Module({ providers: [CloseTenantsJob] })
class BillingModule {}

describe('log lines', () => {
  it('escape control characters in one place: \\n, \\r, \\t, others as \\uXXXX', () => {
    expect(escapeLogText('acme\nERROR forged\r\tx\u0000y\u2028z')).toBe('acme\\nERROR forged\\r\\tx\\u0000y\\u2028z');
    expect(escapeLogText('plain text, unchanged')).toBe('plain text, unchanged');
  });

  it('never carry a raw newline from a tenant id or an error message of a job', async () => {
    const clock = new FixedClock(new Date('2026-03-02T06:00:00Z'));
    const tenants = { listTenants: () => Promise.resolve(['acme\n[Nest] 1 - ERROR forged line']) };
    const moduleRef = await Test.createTestingModule({
      imports: [BillingModule, SchedulingModule.forRoot({ lease: new InMemoryJobLease(clock), timers: new ManualTimers(clock), tenants, start: false })],
    }).compile();
    await moduleRef.init();
    try {
      await captureNestLogs(async (logs) => {
        const [record] = await moduleRef.get(ScheduledJobsService).runNow('billing.close-tenants');
        expect(record).toMatchObject({ outcome: 'failed', tenantId: 'acme\n[Nest] 1 - ERROR forged line' });
        const lines = logs.map((line) => line.message);
        expect(lines.some((line) => line.includes('tenant acme\\n[Nest] 1 - ERROR forged line') && line.includes('is locked\\nsee the runbook'))).toBe(true);
        expect(lines.filter((line) => /[\r\n]/.test(line))).toEqual([]);
      });
    } finally {
      await moduleRef.close();
    }
  });
});
