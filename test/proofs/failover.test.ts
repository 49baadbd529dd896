import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FailoverFigures } from '../failover/failover.checks';
import type { FailoverReport } from '../failover/failover.report';
import { INSTALL_HINT, missingPackages } from '../failover/failover.tools';
import { GroupedChild, killEverythingUnder } from '../support/fleet';

/**
 * The CI-sized failover proof: the orchestrator of `npm run failover` (test/failover/main.ts) in
 * synchronous mode, as a process group of its own: a Patroni cluster of three behind HAProxy,
 * 4 node processes racing for a tick every 500 ms, and one failover of each kind (a crash of the
 * leader, a crash while its replicas lag, a switchover). Needs Debian's patroni, etcd-server,
 * etcd-client, haproxy and postgresql-15 (.ci/run installs them as root); without them the test
 * is skipped, except under CI where it fails. FAILOVER_SEED and FAILOVER_PORT_BASE override.
 */
const SEED = Number(process.env.FAILOVER_SEED ?? 20_260_801);
const PORT_BASE = Number(process.env.FAILOVER_PORT_BASE ?? 61_000);
const ROOT = join(__dirname, '..', '..');

const MUST_BE_ZERO = [
  'lostTicks',
  'forgottenAcquisitions',
  'forgottenCompletions',
  'overlappingRuns',
  'reExecutions',
  'abortedWhileValid',
  'fencingViolations',
] as const satisfies ReadonlyArray<keyof FailoverFigures>;

const missing = missingPackages();

if (missing.length > 0 && !process.env.CI) {
  process.stdout.write(`\nfailover proof skipped: ${missing.join(', ')} not installed (as root: ${INSTALL_HINT})\n`);
}

const describeIfInstalled = missing.length === 0 || process.env.CI ? describe : describe.skip;

describeIfInstalled(`failover proof (sync, CI-sized)${missing.length > 0 ? `: needs ${missing.join(', ')}` : ''}`, () => {
  const child = new GroupedChild();
  let workDir = '';
  let report: FailoverReport;

  beforeAll(async () => {
    if (missing.length > 0) throw new Error(`CI must install ${missing.join(', ')} (.ci/run does: ${INSTALL_HINT})`);
    workDir = await mkdtemp(join(tmpdir(), 'sdcorejs-failover-test-'));
    // The cluster runs as the postgres OS user (when this is root): it must reach its directory.
    await chmod(workDir, 0o755);
    ({ report } = await child.runForReport<FailoverReport>({
      what: 'failover',
      entry: 'test/failover/main.ts',
      args: [...['--mode', 'sync', '--nodes', '4', '--seed', String(SEED), '--port-base', String(PORT_BASE)], ...['--results', workDir, '--work-dir', workDir]],
      reportFile: join(workDir, 'latest-sync.json'),
      cwd: ROOT,
      timeoutMs: 290_000,
    }));
  }, 300_000);

  afterAll(async () => {
    child.kill();
    // PostgreSQL detaches from the process group: whatever still works in the run directory goes.
    if (workDir) {
      killEverythingUnder(workDir);
      await rm(workDir, { recursive: true, force: true });
    }
  });

  it('runs what it claims: synchronous mode, 4 nodes, one failover of each kind to a new leader', () => {
    expect(report.mode).toBe('sync');
    expect(report.seed).toBe(SEED);
    expect(report.config.nodes).toBeGreaterThanOrEqual(4);
    expect(report.faults.map((fault) => fault.kind)).toEqual(['crash', 'lagging-crash', 'switchover']);
    for (const fault of report.faults) {
      expect(fault.problems).toEqual([]);
      expect(fault.failoverMs).toBeGreaterThan(0);
      expect(fault.newLeader).toBeDefined();
      expect(fault.newLeader).not.toBe(fault.oldLeader);
    }
    expect(report.faults[1].stalledWalsenders).toBeGreaterThan(0);
    // The lease reads the cluster as safe, and a strict node is granted its lease.
    expect(report.replication).toMatchObject({ safe: true, standbys: 2, strictAcquire: 'granted' });
    expect(report.figures.ticksPlanned).toBeGreaterThan(100);
  });

  it('keeps every invariant: no tick lost, forgotten, run twice or aborted while its lease was valid', () => {
    const figures = Object.fromEntries(MUST_BE_ZERO.map((id) => [id, report.figures[id]]));
    expect(figures).toEqual(Object.fromEntries(MUST_BE_ZERO.map((id) => [id, 0])));
    expect(report.figures.ticksCompleted).toBe(report.figures.ticksPlanned);
  });

  it('never lets an owner token out, and no node crashes', () => {
    expect(report.tokenLeaks.total).toBe(0);
    expect(report.nodesCrashed).toEqual([]);
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
  });
});
