import fc from 'fast-check';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, InvalidJobLeaseOptionsError } from '../../src/features';
import { resolveLeaseTiming, resolveTimingDefaults } from '../../src/features/job-scheduler/lease-timing';

const defaults = resolveTimingDefaults(undefined);
const timing = (options: object) => resolveLeaseTiming(options, defaults);
const rejects = (options: object) => expect(() => timing(options)).toThrow(InvalidJobLeaseOptionsError);

describe('lease timing', () => {
  it('exports the documented defaults', () => {
    expect(DEFAULT_LEASE_MS).toBe(15 * 60 * 1000);
    expect(DEFAULT_HEARTBEAT_MS).toBe(60 * 1000);
  });

  it('defaults to a 15 minute lease with a 60 s heartbeat', () => {
    expect(timing({})).toEqual({ leaseMs: 900_000, heartbeatMs: 60_000 });
    expect(timing({ leaseMs: undefined, heartbeatMs: undefined })).toEqual({ leaseMs: 900_000, heartbeatMs: 60_000 });
  });

  it('defaults the heartbeat to the smaller of 60 s and a third of the lease', () => {
    expect(timing({ leaseMs: 30_000 }).heartbeatMs).toBe(10_000);
    expect(timing({ leaseMs: 3 }).heartbeatMs).toBe(1);
    expect(timing({ leaseMs: 3_600_000 }).heartbeatMs).toBe(60_000);
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 2 ** 31 - 1 }), (leaseMs) => {
        const { heartbeatMs } = timing({ leaseMs });
        expect(heartbeatMs).toBe(Math.min(60_000, Math.floor(leaseMs / 3)));
        expect(heartbeatMs * 2).toBeLessThan(leaseMs);
      }),
    );
  });

  it.each([null, 0, 1, 2, -5, 1.5, NaN, Infinity, -Infinity, '1000', 2 ** 31, Number.MAX_SAFE_INTEGER + 2, {}, true])('rejects leaseMs %p', (leaseMs) =>
    rejects({ leaseMs }),
  );

  it('accepts leaseMs from 3 to 2^31-1', () => {
    expect(timing({ leaseMs: 3 }).leaseMs).toBe(3);
    expect(timing({ leaseMs: 2 ** 31 - 1 }).leaseMs).toBe(2 ** 31 - 1);
  });

  it.each([null, -1, 1.5, NaN, Infinity, '10', 2 ** 31, false])('rejects heartbeatMs %p', (heartbeatMs) => rejects({ heartbeatMs }));

  it('requires an explicit heartbeat strictly below half the lease, or 0 to disable it', () => {
    expect(timing({ leaseMs: 10_000, heartbeatMs: 4_999 }).heartbeatMs).toBe(4_999);
    rejects({ leaseMs: 10_000, heartbeatMs: 5_000 });
    rejects({ leaseMs: 10_001, heartbeatMs: 5_001 });
    expect(timing({ leaseMs: 10_001, heartbeatMs: 5_000 }).heartbeatMs).toBe(5_000);
    expect(timing({ leaseMs: 10_000, heartbeatMs: 0 }).heartbeatMs).toBe(0);
    rejects({ heartbeatMs: 450_000 });
  });

  it('applies module defaults, validated at boot', () => {
    const custom = resolveTimingDefaults({ leaseMs: 60_000, heartbeatMs: 5_000 });
    expect(resolveLeaseTiming({}, custom)).toEqual({ leaseMs: 60_000, heartbeatMs: 5_000 });
    // A call's own lease keeps the configured heartbeat where it fits, else the rule applies.
    expect(resolveLeaseTiming({ leaseMs: 20_000 }, custom)).toEqual({ leaseMs: 20_000, heartbeatMs: 5_000 });
    expect(resolveLeaseTiming({ leaseMs: 9_000 }, custom)).toEqual({ leaseMs: 9_000, heartbeatMs: 3_000 });
    expect(resolveLeaseTiming({}, resolveTimingDefaults({ leaseMs: 9_000 }))).toEqual({ leaseMs: 9_000, heartbeatMs: 3_000 });
    expect(() => resolveTimingDefaults({ leaseMs: 2 })).toThrow(InvalidJobLeaseOptionsError);
    expect(() => resolveTimingDefaults({ leaseMs: 10_000, heartbeatMs: 6_000 })).toThrow(InvalidJobLeaseOptionsError);
  });
});
