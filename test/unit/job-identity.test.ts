import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { InvalidJobIdentityOptionsError, JobSchedulerType } from '../../src/features';
import { buildLockKey, resolveJobIdentity } from '../../src/features/job-scheduler/job-identity';

/** The reference encoding, written out independently of the implementation. */
const referenceKey = (type: string, code: string, runKey: string | null): string =>
  'v2:' +
  createHash('sha256')
    .update(Buffer.from(`{"version":2,"type":${JSON.stringify(type)},"code":${JSON.stringify(code)},"runKey":${JSON.stringify(runKey)}}`, 'utf8'))
    .digest('base64')
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

describe('v2 job identity', () => {
  it('matches the published vector for SCHEDULE sync-orders at 2026-07-20T03:00:00Z', () => {
    const identity = resolveJobIdentity({ code: 'sync-orders', runKey: '2026-07-20T03:00:00Z' });
    expect(identity.lockKey).toBe('v2:aV_0WdnjWG686cnhQIIg7xFYkUVv2kIMT-wOCbiWakI');
    expect(identity).toEqual({
      type: JobSchedulerType.SCHEDULE,
      code: 'sync-orders',
      runKey: '2026-07-20T03:00:00Z',
      name: null,
      lockKey: 'v2:aV_0WdnjWG686cnhQIIg7xFYkUVv2kIMT-wOCbiWakI',
    });
  });

  it('trims code and runKey before hashing', () => {
    const padded = resolveJobIdentity({ code: '  sync-orders\t', runKey: ' 2026-07-20T03:00:00Z\n' });
    expect(padded.lockKey).toBe('v2:aV_0WdnjWG686cnhQIIg7xFYkUVv2kIMT-wOCbiWakI');
    expect(padded.code).toBe('sync-orders');
  });

  it('encodes INITIAL with a null runKey, distinct from any SCHEDULE run', () => {
    const initial = resolveJobIdentity({ code: 'seed', type: JobSchedulerType.INITIAL });
    expect(initial.runKey).toBeNull();
    expect(initial.lockKey).toBe(referenceKey('INITIAL', 'seed', null));
    expect(initial.lockKey).not.toBe(resolveJobIdentity({ code: 'seed', runKey: 'null' }).lockKey);
  });

  it("keeps 'a:b' INITIAL apart from 'a' + 'b' SCHEDULE", () => {
    const joined = resolveJobIdentity({ code: 'a:b', type: JobSchedulerType.INITIAL }).lockKey;
    const split = resolveJobIdentity({ code: 'a', runKey: 'b' }).lockKey;
    expect(joined).not.toBe(split);
    expect(split).toBe(referenceKey('SCHEDULE', 'a', 'b'));
  });

  it('does not put raw components in the key', () => {
    const { lockKey } = resolveJobIdentity({ code: 'visible-code', runKey: 'visible-run' });
    expect(lockKey).toMatch(/^v2:[A-Za-z0-9_-]{43}$/);
    expect(lockKey).not.toContain('visible');
  });

  it('equals the reference encoding for any valid identity (property)', () => {
    const text = (max: number) =>
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: max }).filter((s) => s.trim().length > 0 && [...s.trim()].length <= max);
    fc.assert(
      fc.property(text(64), text(1024), (code, runKey) => {
        const identity = resolveJobIdentity({ code, runKey });
        expect(identity.lockKey).toBe(referenceKey('SCHEDULE', code.trim(), runKey.trim()));
        expect(buildLockKey(JobSchedulerType.SCHEDULE, code.trim(), runKey.trim())).toBe(identity.lockKey);
      }),
    );
  });

  it('gives different keys to different runs (property)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 20 }), fc.string({ minLength: 1, maxLength: 20 }), (a, b) => {
        fc.pre(a.trim() !== b.trim() && a.trim() !== '' && b.trim() !== '');
        expect(resolveJobIdentity({ code: 'job', runKey: a }).lockKey).not.toBe(resolveJobIdentity({ code: 'job', runKey: b }).lockKey);
      }),
    );
  });
});

describe('identity validation', () => {
  const rejects = (options: unknown) => {
    expect(() => resolveJobIdentity(options)).toThrow(InvalidJobIdentityOptionsError);
  };

  it.each([undefined, null, 'sync', 42, [], true])('rejects options %p that are not an object', (options) => {
    rejects(options);
  });

  it.each([undefined, null, 42, {}, ['x'], Symbol('x')])('rejects a non-string code %p', (code) => {
    rejects({ code, runKey: 'r' });
  });

  it('requires 1-64 characters of code after trimming', () => {
    rejects({ code: '', runKey: 'r' });
    rejects({ code: '   ', runKey: 'r' });
    rejects({ code: 'x'.repeat(65), runKey: 'r' });
    expect(resolveJobIdentity({ code: 'x'.repeat(64), runKey: 'r' }).code).toHaveLength(64);
    expect(resolveJobIdentity({ code: ` ${'x'.repeat(64)} `, runKey: 'r' }).code).toHaveLength(64);
    // Counted in characters (code points), as PostgreSQL varchar(64) counts them.
    expect(resolveJobIdentity({ code: '😀'.repeat(64), runKey: 'r' }).code).toBe('😀'.repeat(64));
    rejects({ code: '😀'.repeat(65), runKey: 'r' });
  });

  it.each(['schedule', 'OTHER', 1, null, ''])('rejects the unknown type %p', (type) => {
    rejects({ code: 'job', runKey: 'r', type });
  });

  it('defaults the type to SCHEDULE, which requires a nonblank string runKey of at most 1024 characters', () => {
    expect(resolveJobIdentity({ code: 'job', runKey: 'r' }).type).toBe(JobSchedulerType.SCHEDULE);
    rejects({ code: 'job' });
    rejects({ code: 'job', runKey: '' });
    rejects({ code: 'job', runKey: ' \n\t ' });
    rejects({ code: 'job', runKey: null });
    rejects({ code: 'job', runKey: 20260720 });
    rejects({ code: 'job', runKey: new Date() });
    rejects({ code: 'job', runKey: 'x'.repeat(1025) });
    expect(resolveJobIdentity({ code: 'job', runKey: 'x'.repeat(1024) }).runKey).toHaveLength(1024);
  });

  it('forbids any runKey for INITIAL, even null or empty', () => {
    for (const runKey of ['r', '', null, 0]) rejects({ code: 'job', type: JobSchedulerType.INITIAL, runKey });
    expect(resolveJobIdentity({ code: 'job', type: JobSchedulerType.INITIAL, runKey: undefined }).runKey).toBeNull();
  });

  it('accepts a name of at most 256 characters and rejects others', () => {
    expect(resolveJobIdentity({ code: 'job', runKey: 'r', name: 'n'.repeat(256) }).name).toHaveLength(256);
    rejects({ code: 'job', runKey: 'r', name: 'n'.repeat(257) });
    rejects({ code: 'job', runKey: 'r', name: 7 });
    rejects({ code: 'job', runKey: 'r', name: null });
  });

  it('rejects NUL characters and lone surrogates, which PostgreSQL cannot store faithfully', () => {
    rejects({ code: 'jo\u0000b', runKey: 'r' });
    rejects({ code: 'job', runKey: 'r\u0000' });
    rejects({ code: 'job', runKey: 'r\uD800' });
    rejects({ code: 'job\uDFFF', runKey: 'r' });
    rejects({ code: 'job', runKey: 'r', name: 'a\u0000' });
    expect(resolveJobIdentity({ code: 'job', runKey: '\uD83D\uDE00' }).runKey).toBe('😀');
  });

  it('ignores fields inherited from a polluted prototype', () => {
    const options = Object.create({ code: 'inherited', runKey: 'r' }) as object;
    rejects(options);
  });
});
