/**
 * The one owner of a holder's time: how long a lease is provably held, how long a statement may
 * take, how long to wait before trying again, and which database failures are worth a retry.
 * Every caller (runExclusive, keepAlive, the executor) decides these things here and nowhere else.
 *
 * A holder's own clock is monotonic (`performance.now()`): wall-clock jumps never move a deadline.
 * Expiry itself is judged by the database clock; the deadline below is the holder's proof that
 * the database cannot yet judge its lease expired.
 */

/** The holder's clock: monotonic milliseconds. */
export const monotonicNow = (): number => performance.now();

/** The largest safety margin taken off a lease: 1 s. */
export const MAX_LEASE_SAFETY_MARGIN_MS = 1_000;

/** The default bound on one lease statement, connection checkout included: 5 s. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5_000;

/**
 * What the holder takes off its lease: a tenth of the lease, at most 1 s. It covers the rate
 * difference between the node's monotonic clock and the database's clock over one lease, and
 * the offset between the clocks of the old and the new primary after a failover (NTP keeps both
 * far below it).
 */
export const leaseSafetyMarginMs = (leaseMs: number): number => Math.min(MAX_LEASE_SAFETY_MARGIN_MS, Math.floor(leaseMs / 10));

/**
 * Until when a write confirmed by the database proves the lease held: the instant the write was
 * *sent* (monotonic), plus the lease, minus the safety margin. The database stamped the row no
 * earlier than that send, so no other node can judge it expired before `sentAt + leaseMs`.
 */
export const provenUntil = (sentAt: number, leaseMs: number): number => sentAt + leaseMs - leaseSafetyMarginMs(leaseMs);

/**
 * The shortest bound a heartbeat gets, however short its interval: below it, a loaded machine
 * would time out (and reconnect) more heartbeats than it sends through.
 */
export const MIN_HEARTBEAT_STATEMENT_MS = 250;

/**
 * How long one lease statement may take: the configured bound, never more than the heartbeat
 * interval (at least MIN_HEARTBEAT_STATEMENT_MS), so a hung heartbeat leaves time for another,
 * and never past the deadline when there is one. At least 1 ms.
 */
export const statementTimeoutMs = (configuredMs: number, options: { heartbeatMs?: number; deadline?: number; now?: number } = {}): number => {
  let timeout = configuredMs;
  if (options.heartbeatMs) timeout = Math.min(timeout, Math.max(options.heartbeatMs, MIN_HEARTBEAT_STATEMENT_MS));
  if (options.deadline !== undefined) timeout = Math.min(timeout, options.deadline - (options.now ?? monotonicNow()));
  return Math.max(1, Math.floor(timeout));
};

/** The first retry waits about this long; each next one doubles it, up to RETRY_MAX_DELAY_MS. */
export const RETRY_BASE_DELAY_MS = 100;
export const RETRY_MAX_DELAY_MS = 2_000;

/**
 * The wait before retry number `attempt` (1 for the first retry): exponential backoff with
 * "equal jitter" (half fixed, half random), so nodes that lost the database together do not come
 * back in lockstep, and never past the deadline.
 */
export const retryDelayMs = (attempt: number, remainingMs: number, random: () => number = Math.random): number => {
  const ceiling = Math.min(RETRY_MAX_DELAY_MS, RETRY_BASE_DELAY_MS * 2 ** Math.min(attempt - 1, 16));
  const delay = ceiling / 2 + random() * (ceiling / 2);
  return Math.max(0, Math.min(Math.floor(delay), remainingMs));
};

/**
 * SQLSTATEs of failures that say nothing about the statement itself and may pass: the server
 * going away or starting (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now),
 * connection exceptions (class 08), too many connections and other resource shortages (class 53),
 * a statement cancelled or timed out (57014), a lock not available in time (55P03), a
 * serialization failure or deadlock (40001, 40P01), and a read-only transaction (25006: a
 * connection that reached a demoted primary or a standby during a failover).
 */
const RETRYABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57014', '55P03', '40001', '40P01', '25006']);
const RETRYABLE_CLASSES = new Set(['08', '53']);

/**
 * Whether a failed lease statement may be retried: a retryable SQLSTATE, or no SQLSTATE at all
 * (the connection was refused, reset or closed, or the statement timed out client-side before
 * any answer). Errors that name a problem of the statement or the schema (a missing table,
 * permission denied, bad data) are not retried: they would fail again.
 */
export const isRetryableSqlState = (sqlState: string | undefined): boolean =>
  sqlState === undefined || RETRYABLE_SQLSTATES.has(sqlState) || RETRYABLE_CLASSES.has(sqlState.slice(0, 2));
