import { checkJobName } from '../../scheduling/schedule/job-declaration';

/** `SyncOrdersCron` → `sync-orders-cron`, `ERPSync` → `erp-sync`, `sync_orders` → `sync-orders`. */
export const kebabCase = (identifier: string): string =>
  identifier
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^[-0-9]+|-+$/g, '')
    .toLowerCase();

/**
 * The default name of a @RunOnce method: `<class>.<method>` in kebab case, e.g.
 * `SyncOrdersCron.syncOrders` → `sync-orders-cron.sync-orders`. It follows the job-name rules
 * (`<context>.<job-name>`, at most 64 characters) so that the lease table, its inspection and
 * retention treat it like a declared job.
 */
export const defaultRunOnceName = (className: string, methodName: string): string => `${kebabCase(className)}.${kebabCase(methodName)}`;

/** Whether `name` follows the job-name rules. */
export const isJobName = (name: string): boolean => {
  try {
    checkJobName(name);
    return true;
  } catch {
    return false;
  }
};
