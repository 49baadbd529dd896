import type { DynamicModule } from '@nestjs/common';

/**
 * Whether two option values are the same: plain objects and arrays compared member by member,
 * anything else (a function, a class instance such as a registry, a lease or timers) by identity.
 */
export const sameOptionValue = (a: unknown, b: unknown): boolean => {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, index) => sameOptionValue(item, b[index]));
  }
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  return differingOptionKeys(a, b).length === 0;
};

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
};

/**
 * The top-level keys whose values differ between two option objects (a key given as undefined
 * counts as absent). Names only: a message built from them never carries a value (a secret).
 */
export const differingOptionKeys = (a: unknown, b: unknown): string[] => {
  const left = isPlainObject(a) ? a : {};
  const right = isPlainObject(b) ? b : {};
  const keys = new Set([...Object.keys(left), ...Object.keys(right)]);
  return [...keys].filter((key) => !sameOptionValue(left[key], right[key])).sort();
};

/** The keys on which any of `others` differs from `first`, each named once. */
export const differingKeysAmong = (all: readonly unknown[]): string[] => {
  const [first, ...others] = all;
  return [...new Set(others.flatMap((other) => differingOptionKeys(first, other)))].sort();
};

/** How many recent registrations of a module are remembered: the imports of one application's modules come together. */
const REMEMBERED = 16;

/**
 * forRoot() results of one module class, by their options: a call with the same options as a
 * recent one returns the same DynamicModule, which Nest imports once (one instance of the
 * module's providers), so that two feature modules may each import `SchedulingModule.forRoot()`.
 * Options that differ make another DynamicModule, which the module's services refuse at init.
 */
export class ModuleRegistrations {
  private readonly recent: { options: unknown; module: DynamicModule }[] = [];

  once(options: unknown, register: () => DynamicModule): DynamicModule {
    const known = this.recent.find((entry) => sameOptionValue(entry.options, options));
    if (known) return known.module;
    const module = register();
    this.recent.push({ options, module });
    if (this.recent.length > REMEMBERED) this.recent.shift();
    return module;
  }
}

/** How the refusal of a second, different registration says what differs (names, never values). */
export const describeDifference = (keys: readonly string[]): string =>
  keys.length > 0
    ? `they differ in ${keys.map((key) => `"${key}"`).join(', ')}`
    : 'they differ in how they are registered (forRootAsync, global or dataSource)';
