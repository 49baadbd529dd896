import { describeFailure, resolveAcquireRequest, serializeJobData } from '../../src/features/job-scheduler/lease-arguments';
import { resolveTimingDefaults } from '../../src/features/job-scheduler/lease-timing';

describe('describeFailure with hostile thrown values', () => {
  const hostile: Array<[string, () => unknown]> = [
    ['an object without a prototype', () => Object.create(null)],
    [
      'an object whose toString throws',
      () => ({
        toString: () => {
          throw new Error('no string');
        },
      }),
    ],
    [
      'an Error whose name getter throws',
      () =>
        Object.defineProperty(new Error('x'), 'name', {
          get: () => {
            throw new Error('getter');
          },
        }),
    ],
    [
      'an Error whose message getter throws',
      () =>
        Object.defineProperty(new Error('x'), 'message', {
          get: () => {
            throw new Error('getter');
          },
        }),
    ],
    [
      'a Proxy whose getPrototypeOf trap throws',
      () =>
        new Proxy(
          {},
          {
            getPrototypeOf: () => {
              throw new Error('trap');
            },
          },
        ),
    ],
    [
      'a revoked Proxy',
      () => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        return proxy;
      },
    ],
  ];

  it.each(hostile)('describes %s as storable data, never throwing', (_, make) => {
    const described = describeFailure(make());
    expect(described).toEqual({ error: { name: expect.any(String), message: expect.any(String) } });
    expect(() => serializeJobData(described)).not.toThrow();
  });

  it('keeps the name and message of an ordinary error', () => {
    expect(describeFailure(new RangeError('out of range'))).toEqual({ error: { name: 'RangeError', message: 'out of range' } });
    expect(describeFailure(42)).toEqual({ error: { name: 'number', message: '42' } });
  });
});

describe('lease timing with a polluted Object.prototype', () => {
  it('takes no default from the prototype chain', () => {
    const prototype = Object.prototype as Record<string, unknown>;
    const defaults = resolveTimingDefaults(undefined);
    prototype.heartbeatMs = 10;
    prototype.leaseMs = 5;
    let timing: { leaseMs: number; heartbeatMs: number };
    try {
      timing = resolveAcquireRequest({ code: 'a', runKey: 'b' }, defaults);
    } finally {
      delete prototype.heartbeatMs;
      delete prototype.leaseMs;
    }
    expect({ leaseMs: timing.leaseMs, heartbeatMs: timing.heartbeatMs }).toEqual({ leaseMs: 900_000, heartbeatMs: 60_000 });
  });
});
