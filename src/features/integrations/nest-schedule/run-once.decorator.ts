import { resolveLeaseTiming } from '../../job-scheduler/lease-timing';
import { DEFAULT_SCHEDULED_LEASE_MS } from '../../scheduling/schedule/job-declaration';
import { invokeRunOnce } from './run-once.bindings';
import { runOnceErrors } from './run-once.errors';
import { isJobName } from './run-once.naming';
import type { RunOnceDeclaration, RunOnceOptions } from './run-once.types';

export const RUN_ONCE_METADATA = Symbol('sdcorejs:run-once');

/** What @RunOnce stored on the method that takes the original's place. */
export interface RunOnceMetadata {
  declaration: RunOnceDeclaration;
  /** The method as written: what a tick runs once its lease is taken. */
  original: (...args: unknown[]) => unknown;
}

/** The @RunOnce declaration of a method, or undefined. The one reader of that metadata. */
export const runOnceOf = (method: unknown): RunOnceMetadata | undefined =>
  typeof method === 'function' ? (Reflect.getOwnMetadata(RUN_ONCE_METADATA, method) as RunOnceMetadata | undefined) : undefined;

const ERROR_POLICIES = ['rethrow', 'log'] as const;

const checkDeclaration = (method: string, name: unknown, options: unknown): RunOnceDeclaration => {
  if (name !== undefined && (typeof name !== 'string' || !isJobName(name))) {
    throw runOnceErrors.invalidDeclaration(
      method,
      `the name must be <context>.<job-name>: two lowercase kebab-case segments, at most 64 characters, got ${typeof name === 'string' ? `"${name}"` : String(name)}`,
    );
  }
  if (options === undefined) return { name: name };
  if (typeof options !== 'object' || options === null) throw runOnceErrors.invalidDeclaration(method, 'options must be an object');
  const { leaseMs, heartbeatMs, errors, abandoned, maxAttempts } = options as RunOnceOptions;
  try {
    resolveLeaseTiming({ leaseMs, heartbeatMs }, { leaseMs: DEFAULT_SCHEDULED_LEASE_MS });
  } catch (error) {
    throw runOnceErrors.invalidDeclaration(method, error instanceof Error ? error.message : String(error), error);
  }
  if (errors !== undefined && !ERROR_POLICIES.includes(errors)) {
    throw runOnceErrors.invalidDeclaration(method, `errors must be 'rethrow' or 'log', got ${String(errors)}`);
  }
  if (abandoned !== undefined && abandoned !== 'take-over' && abandoned !== 'drop') {
    throw runOnceErrors.invalidDeclaration(method, `abandoned must be 'take-over' or 'drop', got ${String(abandoned)}`);
  }
  if (maxAttempts !== undefined && (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 100)) {
    throw runOnceErrors.invalidDeclaration(method, `maxAttempts must be a whole number from 1 to 100, got ${String(maxAttempts)}`);
  }
  return { name: name, leaseMs, heartbeatMs, errors, abandoned, maxAttempts };
};

/**
 * Runs a @nestjs/schedule `@Cron` method on one instance per tick: every instance's tick for the
 * same due instant takes the same lease (code = the name, runKey = the due instant), one runs the
 * method, the others skip it. Inside, `currentJobExecution()` gives the tick's `scheduledAt`,
 * `signal`, `idempotencyKey` and `fencingToken`. Needs `RunOnceModule.forRoot()`.
 *
 * The name defaults to `<class>.<method>` in kebab case (`SyncOrdersCron.syncOrders` →
 * `sync-orders-cron.sync-orders`); give one to keep the lease's identity through a rename.
 * Checked when the file loads; the @Cron beside it is checked at boot.
 *
 *   @Cron('0 *\/5 * * * *', { timeZone: 'Europe/Paris' })
 *   @RunOnce('orders.sync', { leaseMs: 15 * 60_000 })
 *   async syncOrders(): Promise<void> { ... }
 */
export function RunOnce(name?: string, options?: RunOnceOptions): MethodDecorator;
export function RunOnce(options: RunOnceOptions): MethodDecorator;
export function RunOnce(nameOrOptions?: string | RunOnceOptions, maybeOptions?: RunOnceOptions): MethodDecorator {
  const [name, options] = typeof nameOrOptions === 'object' && nameOrOptions !== null ? [undefined, nameOrOptions] : [nameOrOptions, maybeOptions];
  return (target, key, descriptor) => {
    const owner = typeof target === 'function' ? target.name : (target.constructor as { name?: string } | undefined)?.name;
    const method = `${owner ?? '?'}.${String(key)}`;
    const declaration = checkDeclaration(method, name, options);
    const original = descriptor.value as unknown;
    if (typeof original !== 'function') throw runOnceErrors.invalidDeclaration(method, 'it decorates methods only');
    if (runOnceOf(original)) throw runOnceErrors.invalidDeclaration(method, '@RunOnce is given twice');
    if (typeof target === 'function') throw runOnceErrors.invalidDeclaration(method, 'a static method cannot be a @Cron of a provider');

    // The lock wraps the method, invisible to it. It has to be in place now: @nestjs/schedule's
    // explorer reads the method at module init, in an order RunOnceModule cannot control (see
    // RunOnceExplorer); the wrapper finds its lease through the instance it is called on.
    const wrapper = function (this: unknown, ...args: unknown[]): Promise<unknown> {
      return invokeRunOnce(this, key, `${(this as object | undefined)?.constructor?.name ?? owner}.${String(key)}`, args);
    };
    // Metadata already on the method (@Cron put last in source runs first) stays readable on the
    // wrapper; decorators applied after this one write on the wrapper directly.
    for (const metadataKey of Reflect.getOwnMetadataKeys(original)) {
      Reflect.defineMetadata(metadataKey, Reflect.getOwnMetadata(metadataKey, original), wrapper);
    }
    Object.defineProperty(wrapper, 'name', { value: (original as { name: string }).name, configurable: true });
    const metadata: RunOnceMetadata = { declaration, original: original as RunOnceMetadata['original'] };
    Reflect.defineMetadata(RUN_ONCE_METADATA, metadata, wrapper);
    descriptor.value = wrapper as typeof descriptor.value;
    return descriptor;
  };
}
