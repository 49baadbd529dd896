import type { FailoverFigures } from './failover.checks';
import type { FailoverConfig, FailoverMode } from './failover.config';
import type { FaultRecord } from './failover.faults';
import type { ReplicationReading } from './failover.replication';
import type { TokenLeakFigures } from './failover.token-leaks';

/** Everything one mode's run reports; written as JSON, printed as one markdown table. */
export interface FailoverReport {
  mode: FailoverMode;
  seed: number;
  command: string;
  /** The source tree the nodes ran (git HEAD and whether src/ had uncommitted changes). */
  tree: string;
  startedAt: string;
  durationSeconds: number;
  config: Omit<FailoverConfig, 'help'>;
  figures: FailoverFigures;
  tokenLeaks: TokenLeakFigures;
  faults: FaultRecord[];
  replication: ReplicationReading;
  nodesCrashed: string[];
  rows: ReportRow[];
  /** Sync: every must-be-zero row is zero and every fault was carried out. Async: always true. */
  ok: boolean;
  /** The invariants that do not hold (reported in async mode too, where they fail nothing). */
  violations: string[];
  problems: string[];
}

export interface ReportRow {
  label: string;
  value: string;
  /** Must be zero in sync mode. */
  mustBeZero: boolean;
  count?: number;
}

const seconds = (ms: number | undefined): string => (ms === undefined ? 'none' : `${(ms / 1000).toFixed(1)} s`);

const breakdown = (record: Record<string, number>, limit = 6): string => {
  const entries = Object.entries(record).sort((a, b) => b[1] - a[1]);
  if (entries.length === 0) return '';
  const shown = entries.slice(0, limit).map(([kind, count]) => `${kind} ×${count}`);
  return `: ${shown.join('; ')}${entries.length > limit ? `; and ${entries.length - limit} more kinds` : ''}`;
};

/** The rows of a mode's table, in print order. */
export const reportRows = (
  figures: FailoverFigures,
  leaks: TokenLeakFigures,
  faults: FaultRecord[],
  nodesCrashed: string[],
  replication?: ReplicationReading,
): ReportRow[] => {
  const zero = (label: string, count: number, detail = ''): ReportRow => ({ label, value: `${count}${detail}`, mustBeZero: true, count });
  const info = (label: string, value: string | number): ReportRow => ({ label, value: String(value), mustBeZero: false });
  return [
    ...(replication
      ? [
          info(
            'replication as the lease reads it (replicationStatus)',
            `${replication.safe ? 'safe' : 'UNSAFE'}, ${replication.standbys} streaming standbys, synchronous_standby_names '${replication.synchronousStandbyNames}', synchronous_commit ${replication.synchronousCommit}`,
          ),
          info('acquire with requireSynchronousReplication: true', replication.strictAcquire),
        ]
      : []),
    info('ticks planned', figures.ticksPlanned),
    info('ticks completed (SUCCESS in the final table)', figures.ticksCompleted),
    zero('lost ticks (planned, no SUCCESS)', figures.lostTicks),
    zero('forgotten acquisitions', figures.forgottenAcquisitions),
    zero('forgotten completions', figures.forgottenCompletions),
    zero('overlapping runs', figures.overlappingRuns),
    zero('re-executions (ticks whose callback started more than once)', figures.reExecutions),
    zero('aborted while valid (no takeover explains the abort; shutdown excluded)', figures.abortedWhileValid),
    info('total aborts', `${figures.totalAborts}${breakdown(figures.abortReasons)}`),
    zero('fencing strictly increasing per tick', figures.fencingViolations, figures.fencingViolations === 0 ? ' violations (yes)' : ' violations (NO)'),
    info('runExclusive errors thrown to callers', `${figures.runExclusiveErrors}${breakdown(figures.runExclusiveErrorsByKind)}`),
    zero('owner-token leaks', leaks.total, `${breakdown(leaks.byPlace)}${leaks.inFiles > 0 ? ` (files: ${leaks.inFiles})` : ''}`),
    info('UUIDs in errors the node could not place (tokens of acquires that threw?)', `${leaks.unidentifiedUuids}${breakdown(leaks.unidentifiedByPlace, 3)}`),
    info(
      'failover durations (the kill or the switchover request, to the first write through HAProxy that lands on the new leader)',
      faults
        .map(
          (fault) =>
            `${fault.kind} ${fault.oldLeader}→${fault.newLeader ?? '?'} ${seconds(fault.failoverMs)}${fault.stallMs ? ` (after ${seconds(fault.stallMs)} of stopped walsenders)` : ''}`,
        )
        .join(', ') || 'none',
    ),
    info(
      'what a new connection through HAProxy met meanwhile (probes every 100 ms)',
      faults.map((fault) => `${fault.kind}${breakdown(fault.probeFailures, 4)}`).join(' / ') || 'none',
    ),
    info('acquisitions (of which reclaims)', `${figures.acquisitions} (${figures.reclaims})`),
    info('ticks given up at the horizon', figures.ticksGivenUp),
    info('SQLSTATEs and error codes seen by the nodes', breakdown(figures.codesSeen, 12).replace(/^: /, '') || 'none'),
    zero('node processes that crashed', nodesCrashed.length, nodesCrashed.length > 0 ? ` (${nodesCrashed.join(', ')})` : ''),
  ];
};

/** The violated invariants: rows that must be zero and are not. */
export const violationsOf = (rows: ReportRow[]): string[] =>
  rows.filter((row) => row.mustBeZero && (row.count ?? 0) !== 0).map((row) => `${row.label}: ${row.value}`);

const escapeCell = (text: string): string => text.replace(/\|/g, '\\|');

/** One markdown table for the mode, with a line saying what it proves. */
export const renderReport = (report: FailoverReport): string => {
  const mustBe = (row: ReportRow): string => (row.mustBeZero ? (report.mode === 'sync' ? '0' : '(0 in sync)') : '');
  const body = report.rows.map((row) => [
    row.label,
    escapeCell(row.value),
    mustBe(row),
    row.mustBeZero && row.count !== 0 ? (report.mode === 'sync' ? 'FAIL' : 'broken') : '',
  ]);
  const header = ['figure', 'value', 'must be', ''];
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`;
  const { config } = report;
  const verdict =
    report.mode === 'sync'
      ? report.ok
        ? 'every invariant holds'
        : 'FAILED'
      : `reported as measured (async replication may lose acknowledged writes)${report.violations.length > 0 ? `: ${report.violations.length} invariant(s) broken` : ''}`;
  return [
    `### failover proof, ${report.mode} mode: ${verdict}`,
    '',
    `${config.nodes} node processes, a tick every ${config.tickMs} ms, lease ${config.leaseMs} ms, heartbeat ${config.heartbeatMs} ms, ` +
      `work ${config.workMinMs}-${config.workMaxMs} ms; faults ${config.faults.join(', ')}; seed ${report.seed}; ` +
      `${report.durationSeconds.toFixed(0)} s; tree ${report.tree}`,
    '',
    line(header),
    line(['---', '---', '---', '---']),
    ...body.map(line),
    ...(report.problems.length > 0 ? ['', 'details:', ...report.problems.map((problem) => `- ${problem}`)] : []),
  ].join('\n');
};
