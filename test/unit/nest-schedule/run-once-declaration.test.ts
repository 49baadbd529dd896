import 'reflect-metadata';
import { Cron, Interval } from '@nestjs/schedule';
import * as nestScheduleConstants from '@nestjs/schedule/dist/schedule.constants';
import { RunOnce, RunOnceError } from '../../../src/features';
import { NEST_SCHEDULE_METADATA_KEYS, nestScheduleOf } from '../../../src/features/integrations/nest-schedule/nest-schedule.metadata';
import { runOnceOf } from '../../../src/features/integrations/nest-schedule/run-once.decorator';
import { defaultRunOnceName } from '../../../src/features/integrations/nest-schedule/run-once.naming';

describe('the metadata of @nestjs/schedule', () => {
  it('is read under the keys the installed @nestjs/schedule writes', () => {
    for (const [key, value] of Object.entries(NEST_SCHEDULE_METADATA_KEYS)) {
      expect((nestScheduleConstants as Record<string, unknown>)[key]).toBe(value);
    }
  });

  it('a @Cron with its time zone, an @Interval, nothing', () => {
    class Jobs {
      @Cron('*/2 * * * * *', { timeZone: 'Europe/Paris', name: 'tick' })
      tick(): void {}
      @Interval(1_000)
      poll(): void {}
      plain(): void {}
    }
    expect(nestScheduleOf(Jobs.prototype.tick)).toEqual({
      type: 'cron',
      cronTime: '*/2 * * * * *',
      timeZone: 'Europe/Paris',
      utcOffset: undefined,
      name: 'tick',
    });
    expect(nestScheduleOf(Jobs.prototype.poll)).toEqual({ type: 'interval' });
    expect(nestScheduleOf(Jobs.prototype.plain)).toBeUndefined();
  });
});

describe('@RunOnce', () => {
  it('keeps @Cron readable on the method, above or below it', () => {
    class Below {
      @Cron('0 * * * * *', { utcOffset: 60 })
      @RunOnce()
      tick(): void {}
    }
    class Above {
      @RunOnce('orders.sync', { leaseMs: 60_000, errors: 'log' })
      @Cron('0 * * * * *', { utcOffset: 60 })
      tick(): void {}
    }
    for (const method of [Below.prototype.tick, Above.prototype.tick]) {
      expect(nestScheduleOf(method)).toMatchObject({ type: 'cron', cronTime: '0 * * * * *', utcOffset: 60 });
      expect(runOnceOf(method)?.original).toEqual(expect.any(Function));
    }
    expect(runOnceOf(Below.prototype.tick)?.declaration).toEqual({ name: undefined });
    expect(runOnceOf(Above.prototype.tick)?.declaration).toEqual({ name: 'orders.sync', leaseMs: 60_000, heartbeatMs: undefined, errors: 'log' });
    expect(Above.prototype.tick.name).toBe('tick');
  });

  it('takes options without a name', () => {
    class Jobs {
      @RunOnce({ heartbeatMs: 0 })
      tick(): void {}
    }
    expect(runOnceOf(Jobs.prototype.tick)?.declaration).toEqual({ name: undefined, heartbeatMs: 0, leaseMs: undefined, errors: undefined });
  });

  it.each([
    [
      'a name outside the job-name rules',
      () => RunOnce('Orders'),
      '@RunOnce on Jobs.tick: the name must be <context>.<job-name>: two lowercase kebab-case segments, at most 64 characters, got "Orders"',
    ],
    ['a name too long', () => RunOnce(`orders.${'x'.repeat(60)}`), 'at most 64 characters'],
    ['an unsafe lease', () => RunOnce('orders.sync', { leaseMs: 1 }), '@RunOnce on Jobs.tick: '],
    ['a heartbeat that does not fit the lease', () => RunOnce('orders.sync', { leaseMs: 10_000, heartbeatMs: 5_000 }), '@RunOnce on Jobs.tick: '],
    ['an unknown error policy', () => RunOnce({ errors: 'ignore' as 'log' }), "errors must be 'rethrow' or 'log', got ignore"],
  ])('refuses %s when the file loads', (_, decorator, message) => {
    let thrown: unknown;
    try {
      class Jobs {
        tick(): void {}
      }
      const descriptor = Object.getOwnPropertyDescriptor(Jobs.prototype, 'tick') as PropertyDescriptor;
      decorator()(Jobs.prototype, 'tick', descriptor);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RunOnceError);
    expect(thrown).toMatchObject({ code: 'INVALID_DECLARATION', method: 'Jobs.tick', message: expect.stringContaining(message) });
  });

  it('refuses to be given twice', () => {
    expect(() => {
      class Jobs {
        @RunOnce()
        @RunOnce()
        tick(): void {}
      }
      return Jobs;
    }).toThrow('@RunOnce on Jobs.tick: @RunOnce is given twice');
  });

  it('never runs the method without RunOnceModule: the call rejects with NOT_REGISTERED', async () => {
    let calls = 0;
    class Jobs {
      @Cron('* * * * * *')
      @RunOnce()
      async tick(): Promise<void> {
        calls++;
      }
    }
    await expect(new Jobs().tick()).rejects.toMatchObject({
      name: 'RunOnceError',
      code: 'NOT_REGISTERED',
      method: 'Jobs.tick',
      message: expect.stringContaining('Import RunOnceModule.forRoot()'),
    });
    expect(calls).toBe(0);
  });
});

describe('the default name', () => {
  it.each([
    ['SyncOrdersCron', 'syncOrders', 'sync-orders-cron.sync-orders'],
    ['ERPSyncService', 'pull_invoices', 'erp-sync-service.pull-invoices'],
    ['Billing2Cron', 'exportLedgerV2', 'billing2-cron.export-ledger-v2'],
    ['_InternalJobs', '$tick', 'internal-jobs.tick'],
  ])('%s.%s → %s', (className, methodName, expected) => {
    expect(defaultRunOnceName(className, methodName)).toBe(expected);
  });
});
