import type { ScheduledRetentionOptions } from '../../scheduling/scheduled-retention';

/**
 * What a @RunOnce method does with its own errors: `'rethrow'` (the default) hands them to
 * @nestjs/schedule, which logs them and keeps the cron, exactly as without @RunOnce; `'log'`
 * logs them here (context `RunOnce`, repeats of one error summarized) and resolves.
 */
export type RunOnceErrorPolicy = 'rethrow' | 'log';

/** Options of one @RunOnce method. */
export interface RunOnceOptions {
  /** The lease of each tick (default: JobSchedulerModule's `defaults`, else 15 minutes). */
  leaseMs?: number;
  /** Its heartbeat (default: min(60 s, leaseMs / 3)); 0 for none. */
  heartbeatMs?: number;
  /** Default: the module's `errors`, else `'rethrow'`. */
  errors?: RunOnceErrorPolicy;
}

/** `RunOnceModule.forRoot(options)`. */
export interface RunOnceModuleOptions {
  /** The error policy of @RunOnce methods that name none. Default `'rethrow'`. */
  errors?: RunOnceErrorPolicy;
  /**
   * Prune the ticks' finished rows, once per period across instances, as SchedulingModule does for
   * declared jobs: SUCCESS after 7 days, FAIL after 30, every hour, each method keeping at least two
   * of its intervals plus a minute. `false` keeps them forever.
   */
  retention?: ScheduledRetentionOptions | false;
}

/** A @RunOnce declaration, checked when the file loads. */
export interface RunOnceDeclaration {
  /** The lease code; undefined: derived from the class and method at boot. */
  name?: string;
  leaseMs?: number;
  heartbeatMs?: number;
  errors?: RunOnceErrorPolicy;
}
