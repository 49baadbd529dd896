/**
 * What the failover orchestrator and its node processes say to each other (IPC), and what a node
 * writes to its event log: one JSON object a line, in a file of its own in the run directory
 * (never in the cluster under test). Times are `Date.now()`: every process runs on one machine
 * and reads one wall clock.
 */
import { fleetProtocol } from '../support/fleet';
import type { FailoverConfig } from './failover.config';

/** Given to a node process in the FAILOVER_NODE environment variable: the run's settings it needs, and its own. */
export type FailoverNodeSettings = Pick<
  FailoverConfig,
  'seed' | 'tickMs' | 'leaseMs' | 'heartbeatMs' | 'workMinMs' | 'workMaxMs' | 'retryMinMs' | 'retryMaxMs' | 'giveUpMs' | 'poolSize'
> & {
  nodeId: string;
  /** Through HAProxy: node-postgres takes no multi-host connection string. */
  databaseUrl: string;
  eventsFile: string;
  code: string;
};

export type OrchestratorMessage =
  /** Tick every `tickMs` from this instant (aligned on the wall clock) on. */
  | { type: 'start'; firstTickAt: number }
  /** The last tick is this instant: fire it, finish every tick, report `idle`. */
  | { type: 'stop-ticks'; lastTickAt: number }
  /** Release what is still held, close the pool, report `final`, exit 0. */
  | { type: 'shutdown' };

export type NodeMessage =
  | { type: 'ready' }
  /** Every planned tick has had its definite answer (or was given up). */
  | { type: 'idle' }
  /**
   * Last words before exit. The owner tokens travel only here, in memory, so that the
   * orchestrator can look for them in every file the run wrote.
   */
  | { type: 'final'; leaks: LeakCounts; ownerTokens: string[] };

/** Settings in FAILOVER_NODE, messages over IPC (test/support/fleet). */
export const FAILOVER_PROTOCOL = fleetProtocol<FailoverNodeSettings, OrchestratorMessage, NodeMessage>('FAILOVER_NODE');

/** Where a node found owner tokens it had been given, and UUIDs it could not place. */
export interface LeakCounts {
  /** Occurrences of a known owner token, by place (`abort-reason.json`, `console`...). */
  byPlace: Record<string, number>;
  /** UUID-shaped values in errors that are neither a known token nor a known lease id. */
  unidentifiedUuids: number;
  /** Where those were found. */
  unidentifiedByPlace: Record<string, number>;
}

export interface ErrorSummary {
  name: string;
  /** SQLSTATE, a Node socket code (ECONNREFUSED) or a library code (JOB_LEASE_LOST). */
  code?: string;
  message: string;
  /** The `cause` / `driverError` chain below it, nearest first. */
  causes?: Array<{ name: string; code?: string; message: string }>;
}

/** `tick` is always the run key: the tick's instant in ISO 8601. */
export type FailoverEvent =
  | { type: 'boot'; nodeId: string }
  | { type: 'attempt'; tick: string; try: number }
  /** runExclusive threw; `phase` run: after the callback had started. */
  | { type: 'attempt-error'; tick: string; try: number; phase: 'acquire' | 'run'; error: ErrorSummary }
  | { type: 'acquired'; tick: string; try: number; acq: number; id: string; fencingToken: number; attempt: number }
  | { type: 'callback-start'; tick: string; acq: number }
  | { type: 'callback-end'; tick: string; acq: number; outcome: 'worked' | 'aborted' }
  | { type: 'abort'; tick: string; acq: number; duringCallback: boolean; reason: ErrorSummary }
  /** runExclusive resolved `acquired: true`. */
  | { type: 'completed'; tick: string; acq: number; result: unknown }
  /** runExclusive resolved `acquired: false`. */
  | { type: 'not-acquired'; tick: string; try: number }
  | { type: 'gave-up'; tick: string; tries: number };

export type LoggedEvent = FailoverEvent & { at: number };

/** The run key of a tick: its instant, in ISO 8601. */
export const runKeyOf = (instant: number): string => new Date(instant).toISOString();

/** The first tick instant at or after `ms`. */
export const alignTick = (ms: number, tickMs: number): number => Math.ceil(ms / tickMs) * tickMs;

/** Every tick instant from `first` to `last`, both included. */
export const tickInstants = (first: number, last: number, tickMs: number): number[] => {
  const instants: number[] = [];
  for (let instant = first; instant <= last; instant += tickMs) instants.push(instant);
  return instants;
};
