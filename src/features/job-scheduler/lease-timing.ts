import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, MAX_TIMER_MS } from './job-scheduler.constants';
import { leaseErrors } from './job-scheduler.errors';
import { ownValue } from './job-identity';

export interface LeaseTiming {
  leaseMs: number;
  /** 0 means no heartbeat. */
  heartbeatMs: number;
}

/** Module-level defaults; each field optional, validated like an acquire's. */
export interface LeaseTimingDefaults {
  leaseMs?: number;
  heartbeatMs?: number;
}

/** Validated module defaults: a lease, and a heartbeat only where one was configured. */
export interface ResolvedTimingDefaults {
  leaseMs: number;
  heartbeatMs?: number;
}

/** The default heartbeat for a lease: the smaller of 60 s and a third of the lease. */
export const defaultHeartbeatMs = (leaseMs: number): number => Math.min(DEFAULT_HEARTBEAT_MS, Math.floor(leaseMs / 3));

const checkLeaseMs = (value: unknown): number => {
  if (!Number.isSafeInteger(value) || (value as number) <= 2 || (value as number) > MAX_TIMER_MS) {
    throw leaseErrors.leaseMs(value);
  }
  return value as number;
};

const checkHeartbeatMs = (value: unknown, leaseMs: number): number => {
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > MAX_TIMER_MS) {
    throw leaseErrors.heartbeatMsType(value);
  }
  const heartbeatMs = value as number;
  if (heartbeatMs !== 0 && heartbeatMs * 2 >= leaseMs) throw leaseErrors.heartbeatTooSlow(heartbeatMs, leaseMs);
  return heartbeatMs;
};

const fits = (heartbeatMs: number, leaseMs: number): boolean => heartbeatMs === 0 || heartbeatMs * 2 < leaseMs;

/**
 * Resolves lease and heartbeat of one acquire over the module defaults. An omitted field (absent
 * or undefined) takes the default; anything else, null included, must be valid. A configured
 * default heartbeat applies where it fits the lease, else the rule min(60 s, lease / 3) does.
 * Throws InvalidJobLeaseOptionsError.
 */
export const resolveLeaseTiming = (options: object, defaults: ResolvedTimingDefaults): LeaseTiming => {
  const rawLease = ownValue(options, 'leaseMs');
  const rawHeartbeat = ownValue(options, 'heartbeatMs');
  const leaseMs = rawLease === undefined ? defaults.leaseMs : checkLeaseMs(rawLease);
  if (rawHeartbeat !== undefined) return { leaseMs, heartbeatMs: checkHeartbeatMs(rawHeartbeat, leaseMs) };
  // Own only: `defaults` is a plain object, and a polluted Object.prototype must not supply it.
  const configured = ownValue(defaults, 'heartbeatMs') as number | undefined;
  const heartbeatMs = configured !== undefined && fits(configured, leaseMs) ? configured : defaultHeartbeatMs(leaseMs);
  return { leaseMs, heartbeatMs };
};

/** Validates module-level defaults once, at boot. */
export const resolveTimingDefaults = (defaults: LeaseTimingDefaults | undefined): ResolvedTimingDefaults => {
  const source: object = defaults ?? {};
  const rawLease = ownValue(source, 'leaseMs');
  const leaseMs = rawLease === undefined ? DEFAULT_LEASE_MS : checkLeaseMs(rawLease);
  const rawHeartbeat = ownValue(source, 'heartbeatMs');
  return rawHeartbeat === undefined ? { leaseMs } : { leaseMs, heartbeatMs: checkHeartbeatMs(rawHeartbeat, leaseMs) };
};
