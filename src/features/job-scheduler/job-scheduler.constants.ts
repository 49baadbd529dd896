/** Lease length used when an acquire names none: 15 minutes. */
export const DEFAULT_LEASE_MS = 15 * 60_000;

/**
 * The longest default heartbeat interval: 60 seconds. The default for a given lease is the
 * smaller of this and one third of the lease.
 */
export const DEFAULT_HEARTBEAT_MS = 60_000;

/** The largest delay a Node timer honours (2^31 - 1 ms); larger values fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** How long shutdown waits for running callbacks after aborting their signals, by default. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

/** Data recorded by `release` when the caller gives none. */
export const RELEASED_DATA = Object.freeze({ released: true });

/** Injection token of the TypeORM DataSource the lease runs its statements on. */
export const JOB_SCHEDULER_DATA_SOURCE = Symbol('JOB_SCHEDULER_DATA_SOURCE');
