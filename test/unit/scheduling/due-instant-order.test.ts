import { JobScheduleEngine } from '../../../src/features/scheduling/job-schedule-engine';
import { occurrenceRunKey } from '../../../src/features/scheduling/occurrence/occurrence-keys';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { ManualTimers } from '../../../src/features/scheduling/testing/manual-timers';
import { JobSchedulerStatus } from '../../../src/features';
import { FixedClock, InMemoryJobLease } from '../../../src/features/testing';

const MINUTE = 60_000;
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

describe('a due instant with leases claimed ahead', () => {
  it('starts the runs it won before it records the occurrences another instance won, then arms the next instant', async () => {
    const timers = new ManualTimers(new FixedClock(0));
    const lease = new InMemoryJobLease(timers.clock);
    const engine = new JobScheduleEngine({ timers, lease, logger: silent, claimAheadMs: 3_000 });
    const events: string[] = [];
    engine.onRun((record) => void events.push(`${record.name} ${record.outcome} @ ${record.scheduledAt.getTime() / MINUTE}m`));
    // Armed first, so its timer entry comes first at the shared instant.
    for (const name of ['reports.lost', 'reports.won']) {
      engine.register({ declaration: checkJobDeclaration(name, { every: '1m' }), handler: () => void events.push(`${name} started`), enabled: true });
    }
    await engine.start();
    // Another instance holds the first minute's occurrence of reports.lost before the claims go out.
    const other = await lease.acquire({ code: 'reports.lost', runKey: occurrenceRunKey(MINUTE), name: 'reports.lost', reclaimFailed: false });
    expect(other.acquired).toBe(true);

    await timers.advance(MINUTE);
    expect([...events].sort()).toEqual(['reports.lost skipped-locked @ 1m', 'reports.won started', 'reports.won succeeded @ 1m']);
    expect(events[0]).toBe('reports.won started');

    // Both were armed again: the next minute runs both here.
    events.length = 0;
    await timers.advance(MINUTE);
    expect(events.filter((event) => event.endsWith('started')).sort()).toEqual(['reports.lost started', 'reports.won started']);
    await engine.stop();
  });
});

describe('an instance stopped after claiming ahead', () => {
  it('hands its claims over: another instance runs the occurrence at its instant, not before (its take-over scan waits for the instant)', async () => {
    const clock = new FixedClock(0);
    const lease = new InMemoryJobLease(clock);
    const [aTimers, bTimers] = [new ManualTimers(clock), new ManualTimers(clock)];
    const started: Array<{ node: string; scheduledAt: number; startedAt: number; trigger: string }> = [];
    const engine = (node: string, timers: ManualTimers, claimAheadMs: number) => {
      const instance = new JobScheduleEngine({ timers, lease, logger: silent, claimAheadMs, abandoned: lease, takeOverScanMs: 500 });
      const handler = ({ scheduledAt, startedAt, trigger }: { scheduledAt: Date; startedAt: Date; trigger: string }) =>
        void started.push({ node, scheduledAt: scheduledAt.getTime(), startedAt: startedAt.getTime(), trigger });
      instance.register({ declaration: checkJobDeclaration('reports.daily', { every: '1m' }), handler, enabled: true });
      return instance;
    };
    const a = engine('a', aTimers, 3_000);
    await a.start();
    await aTimers.advance(58_000); // claimed at 57 s
    expect(lease.statusOf('reports.daily', occurrenceRunKey(MINUTE))).toBe(JobSchedulerStatus.RUNNING);
    await a.stop();
    // Left RUNNING (its lease run out, marked handed over), not given back.
    expect(lease.statusOf('reports.daily', occurrenceRunKey(MINUTE))).toBe(JobSchedulerStatus.RUNNING);
    expect(lease.attemptsOf('reports.daily', occurrenceRunKey(MINUTE))).toBe(1);

    const b = engine('b', bTimers, 0);
    await b.start();
    await bTimers.advance(1_000); // two scans before the instant: nothing starts early
    expect(started).toEqual([]);
    await bTimers.advance(1_500);
    // Its claim at the instant reclaimed the handed-over row: a take-over, whoever claimed it.
    expect(started).toEqual([{ node: 'b', scheduledAt: MINUTE, startedAt: MINUTE, trigger: 'take-over' }]);
    await b.stop();
  });
});
