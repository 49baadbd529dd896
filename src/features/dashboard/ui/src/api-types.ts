// The answers of the dashboard's JSON API as the page reads them. Pure types (no DOM, no Node):
// test/unit/dashboard/dashboard-ui-types.test.ts checks at compile time that the server's views
// (dashboard-views.ts, dashboard-timeline.ts, dashboard-schedules.ts) still fit them.

export interface ScheduleDescription {
  expression: string;
  words: string;
  timeZone: string | null;
}

export interface HealthWindow {
  last10: { finished: number; succeeded: number };
  last24h: { finished: number; succeeded: number };
  consecutiveFailures: number;
  lastError: { at: string; message: string } | null;
  durationMs: { p50: number; p95: number; recent: number[] } | null;
}

export interface Job {
  name: string;
  /** declared | run-once */
  kind: string;
  method: string | null;
  actions: { runNow: boolean; pause: boolean; why: string | null };
  schedule: ScheduleDescription;
  nextDue: string[];
  lastSuccessAt: string | null;
  /** succeeded | failed | missed | taken-over, or null. */
  lastOutcome: string | null;
  /** ok | degraded | late | failing | disabled: the badge's class. */
  health: string;
  window: HealthWindow;
  paused: { by: string } | null;
}

/** A failing job in "Needs attention": its 10 newest finished occurrences (failures in a row: 10 means ten or more). */
export interface FailingJob {
  name: string;
  kind: string;
  window: Pick<HealthWindow, 'last10' | 'consecutiveFailures' | 'lastError'>;
}

export interface JobsAnswer {
  jobs: Job[];
  nextCursor: string | null;
  total: number;
  pageSize: number;
  failing: FailingJob[];
  failingTotal: number;
}

export interface Schedule {
  id: string;
  handler: string;
  schedule: ScheduleDescription;
  nextDue: string[];
  enabled: boolean;
  tenantId: string | null;
  lastSuccessAt: string | null;
  /** succeeded | failed | missed | taken-over (the newest finished occurrence), or null: the badge's class. */
  lastOutcome: string | null;
  /** ok | degraded | late | failing | disabled: the badge's class. */
  health: string;
  window: HealthWindow;
}

export interface SchedulesPage {
  schedules: Schedule[];
  nextCursor: string | null;
}

export interface TimelineMark {
  at: string;
  /** succeeded | failed | missed | running | taken-over: the mark's class. */
  outcome: string;
  trigger: 'schedule' | 'run-now';
  runId: string;
  runs: number;
}

export interface TimelineGap {
  from: string;
  to: string;
  occurrences: number;
}

export interface TimelineBucket {
  from: string;
  succeeded: number;
  failed: number;
  missed: number;
  running: number;
  'taken-over': number;
  notRun: number;
  runNow: number;
  runId: string | null;
}

export interface Timeline {
  from: string;
  to: string;
  shownFrom: string;
  knownSince: string | null;
  marks: TimelineMark[];
  gaps: TimelineGap[];
  buckets: TimelineBucket[] | null;
  bucketMs: number | null;
  truncated: boolean;
}

export interface RunSummary {
  id: string;
  code: string;
  status: string;
  runKey: string | null;
  attempts: number;
  fencingToken: number;
  ownerId: string | null;
  createdAt: string;
  /** The lease's claim (the table's startedAt). */
  claimedAt: string | null;
  /** The handler's start (finishedAt - data.handlerMs), or null: running, or not recorded. */
  startedAt: string | null;
  dueAt: string | null;
  finishedAt: string | null;
  heartbeatAgeMs: number;
  outcome: string | null;
  errorMessage: string | null;
}

export interface RunsPage {
  runs: RunSummary[];
  nextCursor: string | null;
}

export interface RunDetail extends RunSummary {
  leaseMs: number | null;
  modifiedAt: string;
  data: unknown;
  error: unknown;
  lastError: unknown;
}

export interface ExpiredLease extends RunSummary {
  overdueMs: number;
}

export interface LeasesAnswer {
  leases: ExpiredLease[];
}

/** What an action (run now, pause, resume, release) answers: `applied: false` when there was nothing to do. */
export interface ActionAnswer {
  applied?: boolean;
}
