import { runOnceErrors } from './run-once.errors';

/** Runs one tick of a bound @RunOnce method with the arguments @nestjs/schedule gave it. */
export type RunOnceInvoker = (args: unknown[]) => Promise<unknown>;

/**
 * Which RunOnceModule runs the @RunOnce methods of each provider instance. RunOnceModule binds
 * the instances it discovers at module init, before any cron starts (at bootstrap). Keyed by
 * instance, so that several applications in one process (tests) each use their own lease.
 */
const bindings = new WeakMap<object, Map<string | symbol, RunOnceInvoker>>();

export const bindRunOnce = (instance: object, key: string | symbol, invoker: RunOnceInvoker): void => {
  let methods = bindings.get(instance);
  if (!methods) {
    methods = new Map();
    bindings.set(instance, methods);
  }
  methods.set(key, invoker);
};

/** Runs a tick through the binding of `instance`; a method never runs without its lease. */
export const invokeRunOnce = (instance: unknown, key: string | symbol, method: string, args: unknown[]): Promise<unknown> => {
  const invoker = typeof instance === 'object' && instance !== null ? bindings.get(instance)?.get(key) : undefined;
  if (!invoker) return Promise.reject(runOnceErrors.notRegistered(method));
  return invoker(args);
};
