import fc from 'fast-check';
import { resolveJobIdentity } from '../../../src/features/job-scheduler/job-identity';
import {
  dueInstantOf,
  encodeTenantId,
  MAX_ENCODED_TENANT_LENGTH,
  occurrenceRunKey,
  runNowRunKey,
  tenantIdProblem,
} from '../../../src/features/scheduling/occurrence/occurrence-keys';

const DUE = Date.UTC(2026, 6, 20, 3);
const CORRELATION_ID = '6f1d2c3b-4a59-4e6f-8a7b-9c0d1e2f3a4b';
/** The lock key the lease derives for a tenant's occurrence (after its own trimming and checks). */
const lockKeyOf = (tenantId: string): string => resolveJobIdentity({ code: 'billing.invoice', runKey: occurrenceRunKey(DUE, tenantId) }).lockKey;

/** Strings PostgreSQL text can hold: any code points but NUL and lone surrogates. */
const storableTenantId = fc.string({ unit: 'grapheme', maxLength: 40 }).filter((id) => tenantIdProblem(id) === null);
const whitespace = fc.constantFrom(' ', '\t', '\n', '\r', '\u00a0', '\u2003', '\ufeff', '\u3000');

describe('tenant ids in lease keys', () => {
  it('gives distinct tenant ids distinct lock keys, whitespace at either end included (fast-check)', () => {
    fc.assert(
      fc.property(storableTenantId, storableTenantId, (a, b) => {
        fc.pre(a !== b);
        expect(lockKeyOf(a)).not.toBe(lockKeyOf(b));
      }),
      { numRuns: 2_000 },
    );
    fc.assert(
      fc.property(storableTenantId, whitespace, fc.boolean(), (id, space, before) => {
        const padded = before ? `${space}${id}` : `${id}${space}`;
        expect(lockKeyOf(padded)).not.toBe(lockKeyOf(id));
      }),
    );
  });

  it('keeps the issue\'s pair apart: "acme" and "acme\\t"', () => {
    expect(lockKeyOf('acme')).not.toBe(lockKeyOf('acme\t'));
    expect(occurrenceRunKey(DUE, 'acme\t')).toBe('2026-07-20T03:00:00.000Z tenant=acme%09');
  });

  it("is encodeURIComponent, reversible, and leaves ids of letters, digits and -_.!~*'() as they were", () => {
    fc.assert(
      fc.property(storableTenantId, (id) => {
        expect(decodeURIComponent(encodeTenantId(id))).toBe(id);
        expect(encodeTenantId(id)).not.toMatch(/\s/);
      }),
    );
    expect(occurrenceRunKey(DUE, 'tenant-00042_eu.west')).toBe('2026-07-20T03:00:00.000Z tenant=tenant-00042_eu.west');
    expect(occurrenceRunKey(DUE, 'société 1/2')).toBe('2026-07-20T03:00:00.000Z tenant=soci%C3%A9t%C3%A9%201%2F2');
    expect(runNowRunKey(DUE, CORRELATION_ID, '%')).toBe(`run-now 2026-07-20T03:00:00.000Z ${CORRELATION_ID} tenant=%25`);
  });

  it('leaves the keys of global runs as they were, and still reads the due instant of tenant keys', () => {
    expect(occurrenceRunKey(DUE)).toBe('2026-07-20T03:00:00.000Z');
    expect(dueInstantOf(occurrenceRunKey(DUE, ' a\nb '))).toBe(DUE);
    expect(dueInstantOf('2026-07-20T03:00:00.000Z tenant=acme')).toBe(DUE); // a key of the previous encoding
  });

  it('refuses what no key can hold: not a string, NUL, a lone surrogate, an encoding past the limit', () => {
    for (const id of [42, null, undefined, { id: 'acme' }, Symbol('acme')]) expect(tenantIdProblem(id)).toBe('a tenant id must be a string');
    expect(tenantIdProblem('ac\u0000me')).toMatch(/NUL character or a lone surrogate/);
    expect(tenantIdProblem('ac\ud800me')).toMatch(/NUL character or a lone surrogate/);
    expect(tenantIdProblem('a'.repeat(MAX_ENCODED_TENANT_LENGTH))).toBeNull();
    expect(tenantIdProblem('a'.repeat(MAX_ENCODED_TENANT_LENGTH + 1))).toMatch(/takes 948 characters, more than the 947/);
    // Percent-encoding counts: 316 × "é" is 1,896 characters encoded.
    expect(tenantIdProblem('é'.repeat(316))).toMatch(/takes 1896 characters/);
    expect(tenantIdProblem('')).toBeNull();
  });

  it('fits every accepted id in both key forms the lease accepts', () => {
    const longest = 'a'.repeat(MAX_ENCODED_TENANT_LENGTH);
    expect(() => resolveJobIdentity({ code: 'a.b', runKey: occurrenceRunKey(DUE, longest) })).not.toThrow();
    expect(() => resolveJobIdentity({ code: 'a.b', runKey: runNowRunKey(DUE, CORRELATION_ID, longest) })).not.toThrow();
  });
});
