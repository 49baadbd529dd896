/**
 * What the scheduler chaos orchestrator and its instance processes say to each other (IPC), and
 * what an instance writes to its journal: one JSON object a line, appended synchronously, so that
 * a SIGKILL loses at most the line being written. Times named `...Ms` are real epoch ms read from
 * the monotonic clock (performance.timeOrigin + performance.now()), never from `Date`, which the
 * clock-step fault falsifies on one instance (realNow of test/support/fleet).
 */
import { fleetProtocol } from '../../support/fleet';

/** Given to an instance process in SCHED_CHAOS_INSTANCE. */
export interface InstanceSettings {
  nodeId: string;
  slot: number;
  generation: number;
  /** The URL of the library's pool: straight to PostgreSQL, or through the orchestrator's proxy. */
  databaseUrl: string;
  /** The recorder's own connection: always straight to PostgreSQL, never cut, never terminated. */
  recorderUrl: string;
  journalFile: string;
  seed: number;
}

export type OrchestratorMessage = { type: 'stop' };

export type InstanceMessage =
  { type: 'ready' } | { type: 'run-start'; runId: string; code: string; runKey: string; plannedMs: number } | { type: 'run-end'; runId: string };

/** Settings in SCHED_CHAOS_INSTANCE, messages over IPC (test/support/fleet). */
export const SCHEDULER_CHAOS_PROTOCOL = fleetProtocol<InstanceSettings, OrchestratorMessage, InstanceMessage>('SCHED_CHAOS_INSTANCE');

export type RunKind = 'scheduled' | 'tenant' | 'run-once' | 'dynamic';

/** A handler began: written before it does anything else. */
export interface RunStart {
  runId: string;
  nodeId: string;
  pid: number;
  kind: RunKind;
  code: string;
  runKey: string;
  scheduledAt: number;
  tenantId?: string;
  scheduleId?: string;
  fencingToken: number;
  idempotencyKey: string;
  trigger: string;
  plannedMs: number;
  startedMs: number;
  /** `Date.now()` in the process at the start: differs from startedMs on a clock-stepped instance. */
  wallStartedMs: number;
}

export type RunOutcome = 'completed' | 'aborted';

export interface RunEnd {
  runId: string;
  endedMs: number;
  outcome: RunOutcome;
  /** The abort reason's name (LostJobLeaseError, JobShutdownError, ...). */
  reason?: string;
}

export type JournalLine =
  | ({ type: 'start' } & RunStart)
  | ({ type: 'end' } & RunEnd)
  | { type: 'boot'; nodeId: string; pid: number; realMs: number; wallMs: number }
  | { type: 'ready'; realMs: number }
  /** SIGTERM received: app.close() begins. */
  | { type: 'closing'; realMs: number }
  | { type: 'closed'; realMs: number };

/** The recorder's table: one row per handler execution, inserted at its start, updated at its end. */
export const CHAOS_RUNS_TABLE = `
CREATE TABLE chaos_runs (
  "runId" uuid PRIMARY KEY,
  "nodeId" text NOT NULL,
  "pid" integer NOT NULL,
  "kind" text NOT NULL,
  "code" text NOT NULL,
  "runKey" text NOT NULL,
  "scheduledAt" timestamptz NOT NULL,
  "tenantId" text,
  "scheduleId" text,
  "fencingToken" bigint NOT NULL,
  "idempotencyKey" text NOT NULL,
  "trigger" text NOT NULL,
  "plannedMs" integer NOT NULL,
  "startedMs" bigint NOT NULL,
  "wallStartedMs" bigint NOT NULL,
  "endedMs" bigint,
  "outcome" text,
  "reason" text,
  "dbStartedAt" timestamptz NOT NULL DEFAULT clock_timestamp(),
  "dbEndedAt" timestamptz
);
CREATE INDEX chaos_runs_occurrence ON chaos_runs ("code", "runKey");`;
