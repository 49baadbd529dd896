import { AsyncLocalStorage } from 'node:async_hooks';
import type { JobExecution } from '../scheduling.types';

const storage = new AsyncLocalStorage<JobExecution>();

/**
 * The execution of the scheduled run the calling code belongs to (its job, tenant, correlation
 * id), anywhere below its run(); undefined outside a run.
 */
export const currentJobExecution = (): JobExecution | undefined => storage.getStore();

/** Runs `fn` as part of `execution`. */
export const withJobExecution = <T>(execution: JobExecution, fn: () => T): T => storage.run(execution, fn);
