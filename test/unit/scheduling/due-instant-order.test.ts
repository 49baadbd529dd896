import { JobScheduleEngine } from '../../../src/features/scheduling/job-schedule-engine';
import { occurrenceRunKey } from '../../../src/features/scheduling/occurrence-keys';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { ManualTimers } from '../../../src/features/scheduling/testing/manual-timers';
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
