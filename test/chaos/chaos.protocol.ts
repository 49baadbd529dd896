import { fleetProtocol } from '../support/fleet';
import type { ChaosConfig } from './chaos.config';
import { unitOf } from './chaos.random';

/**
 * What the orchestrator and its worker processes say to each other (IPC), what a worker writes
 * to its event log (one JSON object a line, appended synchronously so that a SIGKILL loses at
 * most the line being written), and the per-run rules both sides compute the same way.
 */

/** Given to a worker process in the CHAOS_WORKER environment variable: the run's settings it needs, and its own. */
export type ChaosWorkerSettings = Pick<
  ChaosConfig,
  'seed' | 'codes' | 'ticks' | 'leaseMs' | 'heartbeatMs' | 'workMinMs' | 'workMaxMs' | 'plannedFailureRate' | 'sweepMs' | 'clockSkewMs'
> & {
  slot: number;
  generation: number;
  nodeId: string;
  databaseUrl: string;
  eventsFile: string;
};

export type OrchestratorMessage =
  /** Ticks 0..index are due. A worker that joins late gets the latest one first. */
  | { type: 'tick'; index: number }
  /** Every tick is finished: stop sweeping, close the application, exit 0. */
  | { type: 'stop' };

export type WorkerMessage =
  | { type: 'ready'; clockMs: number }
  /** A callback began: this worker now owns `key` with `fencingToken`. */
  | { type: 'run-start'; key: string; fencingToken: number; workMs: number }
  | { type: 'run-end'; key: string; fencingToken: number };

/** Settings in CHAOS_WORKER, messages over IPC (test/support/fleet). */
export const CHAOS_PROTOCOL = fleetProtocol<ChaosWorkerSettings, OrchestratorMessage, WorkerMessage>('CHAOS_WORKER');

export interface ErrorSummary {
  name: string;
  code?: string;
  message: string;
  causeName?: string;
}

export type WorkerEvent =
  | { type: 'boot'; nodeId: string; clockMs: number; realMs: number }
  | { type: 'start'; key: string; code: string; tick: number; fencingToken: number; attempt: number }
  /** Side effect 1: the outbox row keyed uniquely by idempotencyKey; `inserted` false = deduplicated. */
  | { type: 'effect'; key: string; fencingToken: number; inserted: boolean }
  /** Side effect 2: the fenced write; `accepted` false = refused by the fence. */
  | { type: 'fence'; key: string; fencingToken: number; accepted: boolean }
  /** runExclusive resolved: the run was completed (SUCCESS) by this owner. */
  | { type: 'success'; key: string; fencingToken: number }
  /** runExclusive (or the acquire in it) threw. */
  | {
      type: 'error';
      key: string;
      /** Whether this worker had acquired the run (its callback started). */
      owned: boolean;
      fencingToken?: number;
      error: ErrorSummary;
      signalAborted: boolean;
      signalReason?: string;
    }
  /** The sweeper's own query failed (a database error the worker survives). */
  | { type: 'sweep-error'; error: ErrorSummary };

/** Every worker names the runs alike: tick n is 2026-01-01T00:00:00Z plus n minutes. */
export const runKeyOf = (tick: number): string => new Date(Date.UTC(2026, 0, 1, 0, tick)).toISOString();

/** The resource a run writes to, and how a run is named in logs: `code/runKey`. */
export const resourceOf = (code: string, runKey: string): string => `${code}/${runKey}`;

export interface RunPlan {
  workMs: number;
  /** The callback throws a planned error (only ever on a first attempt). */
  fails: boolean;
}

/** The same plan for a given attempt of a run, whichever worker wins it. */
export const runPlanOf = (
  settings: Pick<ChaosWorkerSettings, 'seed' | 'workMinMs' | 'workMaxMs' | 'plannedFailureRate'>,
  code: string,
  tick: number,
  attempt: number,
): RunPlan => ({
  workMs: Math.round(settings.workMinMs + unitOf(settings.seed, 'work', code, tick, attempt) * (settings.workMaxMs - settings.workMinMs)),
  fails: attempt === 1 && unitOf(settings.seed, 'fail', code, tick) < settings.plannedFailureRate,
});

export const summarizeError = (error: unknown): ErrorSummary => {
  if (!(error instanceof Error)) return { name: typeof error, message: String(error) };
  const code = (error as { code?: unknown }).code;
  const cause = error.cause;
  return {
    name: error.name,
    ...(typeof code === 'string' ? { code } : {}),
    message: error.message.slice(0, 300),
    ...(cause instanceof Error ? { causeName: cause.name } : {}),
  };
};
