import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChaosFigures, ChaosReport } from '../chaos/chaos.report';
import { GroupedChild } from '../support/fleet';

/**
 * The CI-sized chaos run: the orchestrator of `npm run chaos` (test/chaos/main.ts) with the `ci`
 * preset, as a process group of its own: 4 worker processes, 120 logical runs, every kind of
 * fault (SIGKILL, SIGSTOP past the lease, pg_terminate_backend, a restart of its own PostgreSQL,
 * a worker clock off by hours). The seed is fixed so that a failure replays; CHAOS_SEED overrides.
 */
const SEED = Number(process.env.CHAOS_SEED ?? 20_260_717);
const ROOT = join(__dirname, '..', '..');

const MUST_BE_ZERO = [
  'doubleSuccess',
  'sideEffectRowsOverOne',
  'staleFencedWritesAccepted',
  'resourcesNotLastWrittenByCompleter',
  'successWithoutSideEffect',
  'pausedOwnersNotStopped',
  'earlyReclaims',
  'runsNeverFinished',
  'workersCrashed',
  'ownerTokensInLogs',
] as const satisfies ReadonlyArray<keyof ChaosFigures>;

const child = new GroupedChild();
const reportPath = join(tmpdir(), `sdcorejs-chaos-report-${process.pid}.json`);

afterAll(async () => {
  child.kill();
  await rm(reportPath, { force: true });
});

describe('chaos (CI-sized)', () => {
  let report: ChaosReport;

  beforeAll(async () => {
    ({ report } = await child.runForReport<ChaosReport>({
      what: 'chaos',
      entry: 'test/chaos/main.ts',
      args: ['--preset', 'ci', '--seed', String(SEED), '--report', reportPath],
      reportFile: reportPath,
      cwd: ROOT,
      timeoutMs: 110_000,
    }));
  }, 120_000);

  it('runs the preset it claims: several processes, every tick of several codes', () => {
    expect(report.seed).toBe(SEED);
    expect(report.config.workers).toBeGreaterThanOrEqual(4);
    expect(report.config.codes.length).toBeGreaterThanOrEqual(3);
    expect(report.figures.logicalRuns).toBe(report.config.codes.length * report.config.ticks);
  });

  it('injects every fault it plans', () => {
    const { kills, pauses, restarts, backendKills, pausedRunsLost, reclaimedRuns, skewedClockHours } = report.figures;
    expect({ kills, pauses, restarts }).toEqual({ kills: report.config.kills, pauses: report.config.pauses, restarts: 1 });
    expect(backendKills).toBeGreaterThan(0);
    expect(report.figures.shortestPauseMs).toBeGreaterThan(report.config.leaseMs);
    // The paused owner was really overtaken, and runs really ended through reclaims.
    expect(pausedRunsLost).toBeGreaterThan(0);
    expect(reclaimedRuns).toBeGreaterThan(0);
    expect(Math.abs(skewedClockHours)).toBeGreaterThanOrEqual(1);
  });

  it('finishes every logical run exactly once', () => {
    expect(report.figures.successRows).toBe(report.figures.logicalRuns);
  });

  it('keeps every must-be-zero figure at zero', () => {
    const figures = Object.fromEntries(MUST_BE_ZERO.map((id) => [id, report.figures[id]]));
    expect(figures).toEqual(Object.fromEntries(MUST_BE_ZERO.map((id) => [id, 0])));
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
  });
});
