import type { ScheduledRetentionOptions } from '../../scheduling/retention/scheduled-retention';

/**
 * What a @RunOnce method does with its own errors: `'rethrow'` (the default) hands them to
 * @nestjs/schedule, which logs them and keeps the cron, exactly as without @RunOnce; `'log'`
 * logs them here (context `RunOnce`, repeats of one error summarized) and resolves.
 */
export type RunOnceErrorPolicy = 'rethrow' | 'log';

/** Options of one @RunOnce method. */
export interface RunOnceOptions {
  /**
   * The lease of each tick (default 60 s): heartbeats keep a long tick alive, and a tick whose
   * holder vanished is taken over by another instance about one lease later.
   */
  leaseMs?: number;
  /** Its heartbeat (default: min(60 s, leaseMs / 3)); 0 for none. */
  heartbeatMs?: number;
  /** Default: the module's `errors`, else `'rethrow'`. */
  errors?: RunOnceErrorPolicy;
  /** A tick whose holder stopped heartbeating: run again by another instance (default) or dropped. */
  abandoned?: 'take-over' | 'drop';
  /** Owners a tick may have in all (default 3); past it, it is ended with JOB_ABANDONED. */
  maxAttempts?: number;
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
  /** How often each instance looks for ticks whose holder vanished, to take them over. Default 30 s. */
  takeOverScanMs?: number;
}

/** A @RunOnce declaration, checked when the file loads. */
export interface RunOnceDeclaration {
  /** The lease code; undefined: derived from the class and method at boot. */
  name?: string;
  leaseMs?: number;
  heartbeatMs?: number;
  errors?: RunOnceErrorPolicy;
  abandoned?: 'take-over' | 'drop';
  maxAttempts?: number;
}
