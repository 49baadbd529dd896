import { InvalidJobDataError, InvalidJobLeaseError, InvalidJobLeaseOptionsError } from '../../src/features';
import { checkJobLease, describeFailure, resolveAcquireRequest, serializeJobData } from '../../src/features/job-scheduler/lease-arguments';
import { resolveTimingDefaults } from '../../src/features/job-scheduler/lease-timing';

describe('finalize data', () => {
  it('serializes JSON values and leaves undefined as no data', () => {
    expect(serializeJobData(undefined)).toBeNull();
    expect(serializeJobData(null)).toBe('null');
    expect(serializeJobData({ rows: 42 })).toBe('{"rows":42}');
    expect(serializeJobData("'; DROP TABLE x; --")).toBe(`"'; DROP TABLE x; --"`);
  });

  it('refuses what JSON cannot express, with a typed error', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    for (const data of [circular, { n: 10n }, 10n, () => 1, Symbol('s')]) {
      expect(() => serializeJobData(data)).toThrow(InvalidJobDataError);
    }
  });

  it('refuses NUL characters and lone surrogates in keys and values', () => {
    for (const data of ['a\u0000', { 'k\u0000': 1 }, { nested: ['\uD800'] }]) {
      expect(() => serializeJobData(data)).toThrow(InvalidJobDataError);
    }
  });

  it('describes failures as JSON-safe name and message', () => {
    expect(describeFailure(new TypeError('bad\u0000input'))).toEqual({ error: { name: 'TypeError', message: 'bad\uFFFDinput' } });
    expect(describeFailure('plain')).toEqual({ error: { name: 'string', message: 'plain' } });
    expect(() => serializeJobData(describeFailure(new Error('x\uD800')))).not.toThrow();
  });
});

describe('lease arguments', () => {
  const id = '6f1c3f0e-8d1c-4a6b-9f3e-2b9a1c0d4e5f';
  it('accepts two UUIDs and rejects anything else before SQL', () => {
    expect(checkJobLease({ id, ownerToken: id, extra: 1 })).toEqual({ id, ownerToken: id });
    for (const lease of [null, undefined, {}, { id }, { id, ownerToken: 'x' }, { id: 1, ownerToken: id }, "'; --"]) {
      expect(() => checkJobLease(lease)).toThrow(InvalidJobLeaseError);
    }
  });

  it('validates reclaimFailed', () => {
    const defaults = resolveTimingDefaults(undefined);
    expect(resolveAcquireRequest({ code: 'a', runKey: 'b' }, defaults).reclaimFailed).toBe(true);
    expect(resolveAcquireRequest({ code: 'a', runKey: 'b', reclaimFailed: false }, defaults).reclaimFailed).toBe(false);
    expect(() => resolveAcquireRequest({ code: 'a', runKey: 'b', reclaimFailed: 'no' }, defaults)).toThrow(InvalidJobLeaseOptionsError);
  });
});
