import { DeclarationError, Scheduled } from '../../../src/features';
import { cronExpressionError } from '../../../src/features/scheduling/schedule/cron-expression';
import { parseInterval } from '../../../src/features/job-scheduler/duration';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { resolveScheduledRetention } from '../../../src/features/scheduling/retention/scheduled-retention';

const declare = (name: unknown, options: object) => () => checkJobDeclaration(name, options as never);

describe('job declarations', () => {
  it('accepts <context>.<job-name> with a schedule and applies the defaults', () => {
    const declaration = checkJobDeclaration('notifications.send-reminders', { cron: '0 7 * * *', timeZone: 'Europe/Paris' });
    expect(declaration).toMatchObject({
      name: 'notifications.send-reminders',
      overlap: 'skip',
      missed: 'drop',
      tenancy: 'global',
      jitterMs: 0,
      // A short lease (heartbeats keep long runs alive): an abandoned occurrence is taken over soon.
      leaseMs: 60_000,
      abandoned: 'take-over',
      maxAttempts: 3,
    });
    expect(checkJobDeclaration('billing.close-day', { every: '1d', leaseMs: 900_000, abandoned: 'drop', maxAttempts: 1 })).toMatchObject({
      leaseMs: 900_000,
      abandoned: 'drop',
      maxAttempts: 1,
    });
    expect(checkJobDeclaration('billing.export-ledger', { every: '15m', overlap: 'queue', missed: 'run-once', timeoutMs: 60_000 })).toMatchObject({
      overlap: 'queue',
      missed: 'run-once',
      timeoutMs: 60_000,
    });
  });

  it.each(['send-reminders', 'Notifications.send', 'a.b.c', 'a..b', 'a.b-', 'a_b.c', '', `${'a'.repeat(32)}.${'b'.repeat(32)}`, 7])(
    'refuses the job name %p',
    (name) => {
      expect(declare(name, { every: '1m' })).toThrow(DeclarationError);
    },
  );

  it('names the job in the error', () => {
    expect(declare('billing.export', { every: 0 })).toThrow('Scheduled job "billing.export"');
    const error = (() => {
      try {
        checkJobDeclaration('billing.export', { cron: '61 * * * *' });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(DeclarationError);
    expect(error).toMatchObject({ jobName: 'billing.export', code: 'DECLARATION_ERROR' });
  });

  it('requires exactly one of cron and every', () => {
    expect(declare('a.b', {})).toThrow(DeclarationError);
    expect(declare('a.b', { every: '1m', cron: '* * * * *' })).toThrow(DeclarationError);
  });

  it.each([0, -1, NaN, Infinity, 1.5, '0m', '15', 'soon', '-5m', null])('refuses the interval %p', (every) => {
    expect(declare('a.b', { every })).toThrow(DeclarationError);
  });

  it('bounds an interval by the horizon a cron must fire within: 8 years (2928d)', () => {
    const bound = 2928 * 86_400_000;
    expect(checkJobDeclaration('a.b', { every: '2928d' }).schedule).toMatchObject({ everyMs: bound });
    expect(checkJobDeclaration('a.b', { every: bound }).schedule).toMatchObject({ everyMs: bound });
    expect(declare('a.b', { every: bound + 1 })).toThrow(
      new DeclarationError('a.b', `"every" must be at most 2928d (8 years, ${bound} ms: a cron must fire within that too), got ${bound + 1}`),
    );
    for (const every of [Number.MAX_SAFE_INTEGER, '2929d', '100000d', '9007199254740991ms']) {
      expect(declare('a.b', { every })).toThrow(DeclarationError);
      expect(declare('a.b', { every })).toThrow(/"every" must be at most 2928d/);
    }
    // The same bound for the retention period, the other `every`.
    expect(resolveScheduledRetention({ every: '2928d' }, 60_000)).toMatchObject({ everyMs: bound });
    expect(() => resolveScheduledRetention({ every: Number.MAX_SAFE_INTEGER }, 60_000)).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: 'SchedulingModule option retention.every must be at most 2928d (8 years, as a job\'s "every"), got 9007199254740991',
      }),
    );
  });

  it("passes retention's dutyCycle on to prune (default 0.5) and refuses one outside 0.01-1 at boot", () => {
    expect(resolveScheduledRetention(undefined, 60_000)).toMatchObject({ dutyCycle: 0.5 });
    expect(resolveScheduledRetention({ dutyCycle: 0.2 }, 60_000)).toMatchObject({ dutyCycle: 0.2 });
    expect(resolveScheduledRetention({ dutyCycle: 1 }, 60_000)).toMatchObject({ dutyCycle: 1 });
    for (const dutyCycle of [0, 0.001, 1.01, Number.NaN, '0.5', null]) {
      expect(() => resolveScheduledRetention({ dutyCycle }, 60_000)).toThrow(
        expect.objectContaining({
          code: 'INVALID_OPTIONS',
          message: expect.stringContaining('SchedulingModule option retention.dutyCycle must be a number from 0.01 to 1'),
        }),
      );
    }
  });

  it('reads intervals', () => {
    expect(parseInterval('15m')).toBe(900_000);
    expect(parseInterval('1h30m')).toBe(5_400_000);
    expect(parseInterval('500ms')).toBe(500);
    expect(parseInterval('2d')).toBe(172_800_000);
    expect(parseInterval(420_000)).toBe(420_000);
  });

  it.each([
    '0 0 30 2 *', // never fires
    '* * * * * *', // seconds
    '@daily',
    '0 0 L * *',
    '0 0 15W * *',
    '0 0 * * 5#3',
    '0 0 ? * *',
    '60 * * * *',
    '* 24 * * *',
    '* * 0 * *',
    '* * * 13 *',
    '* * * * 8',
    '5-1 * * * *',
    '*/0 * * * *',
    '* * * FOO *',
    'not a cron',
  ])('refuses the cron %p', (cron) => {
    expect(declare('a.b', { cron })).toThrow(DeclarationError);
  });

  it('tells a six-field cron (with seconds) to drop the seconds field, in the typed error @Scheduled throws', () => {
    const decorate = () => Scheduled('billing.export', { cron: '0 */5 * * * *' })(class ExportLedger {});
    expect(decorate).toThrow(DeclarationError);
    expect(decorate).toThrow(
      'cannot read the cron "0 */5 * * * *": a cron expression has exactly five fields (minute hour day month weekday), got 6: drop the seconds field (the first one), "*/5 * * * *"',
    );
  });

  it.each(['0 0 29 2 *', '*/15 * * * *', '0 7 * * 1-5', '0 9 1,15 JAN-MAR MON', '0 0 * * SUN', '30 2 * * *'])('accepts the cron %p', (cron) => {
    expect(declare('a.b', { cron })).not.toThrow();
    expect(cronExpressionError(cron)).toBeNull();
  });

  it('validates time zones with Intl: UTC and IANA names pass, others fail', () => {
    expect(declare('a.b', { cron: '0 7 * * *', timeZone: 'UTC' })).not.toThrow();
    expect(declare('a.b', { cron: '0 7 * * *', timeZone: 'Asia/Kolkata' })).not.toThrow();
    expect(declare('a.b', { cron: '0 7 * * *', timeZone: 'Mars/Olympus' })).toThrow(DeclarationError);
    expect(declare('a.b', { cron: '0 7 * * *', timeZone: '' })).toThrow(DeclarationError);
    expect(declare('a.b', { every: '1m', timeZone: 'UTC' })).toThrow(DeclarationError);
  });

  it.each([
    { overlap: 'wait' },
    { missed: 'all' },
    { tenancy: 'each' },
    { timeoutMs: 0 },
    { timeoutMs: 2 ** 31 },
    { jitterMs: -1 },
    { leaseMs: 2 },
    { abandoned: 'retry' },
    { maxAttempts: 0 },
    { maxAttempts: 1.5 },
    { maxAttempts: 101 },
  ])('refuses the policy %p', (policy) => {
    expect(declare('a.b', { every: '1m', ...policy })).toThrow(DeclarationError);
  });

  it('runs 4 tenants at once by default, and takes tenantConcurrency from 1 to 100 on per-tenant jobs only', () => {
    expect(checkJobDeclaration('a.b', { every: '1m', tenancy: 'per-tenant' }).tenantConcurrency).toBe(8);
    expect(checkJobDeclaration('a.b', { every: '1m', tenancy: 'per-tenant', tenantConcurrency: 1 }).tenantConcurrency).toBe(1);
    expect(checkJobDeclaration('a.b', { every: '1m', tenancy: 'per-tenant', tenantConcurrency: 100 }).tenantConcurrency).toBe(100);
    for (const tenantConcurrency of [0, -1, 1.5, 101, Number.NaN, Infinity, '4', null]) {
      expect(declare('a.b', { every: '1m', tenancy: 'per-tenant', tenantConcurrency })).toThrow(
        new DeclarationError('a.b', `tenantConcurrency must be a whole number from 1 to 100, got ${String(tenantConcurrency)}`),
      );
    }
    expect(declare('a.b', { every: '1m', tenantConcurrency: 4 })).toThrow(
      new DeclarationError('a.b', "tenantConcurrency applies to tenancy: 'per-tenant' jobs only"),
    );
  });

  it('checks @Scheduled when the class is declared', () => {
    expect(() => {
      @Scheduled('Bad Name', { every: '1m' })
      class BadJob {
        run() {}
      }
      return BadJob;
    }).toThrow(DeclarationError);
  });
});
