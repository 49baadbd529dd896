import type { JobExecution } from '../../../src/features';
import { FixedClock, InMemoryJobLease } from '../../../src/features/testing';
import { JobScheduleEngine } from '../../../src/features/scheduling/job-schedule-engine';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { ManualTimers } from '../../../src/features/scheduling/testing/manual-timers';

describe('JobScheduleEngine.setEnabled (a pause at runtime)', () => {
  it('disarms a job, then fires it again from its next due instant (nothing due meanwhile is run)', async () => {
    const clock = new FixedClock(Date.UTC(2026, 0, 1, 0, 0, 30));
    const timers = new ManualTimers(clock);
    const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };
    const engine = new JobScheduleEngine({ timers, lease: new InMemoryJobLease(clock), logger: silent });
    const ran: string[] = [];
    engine.register({
      declaration: checkJobDeclaration('audit.verify-chain', { every: '1m' }),
      handler: (e: JobExecution) => void ran.push(e.scheduledAt.toISOString()),
      enabled: true,
    });
    await engine.start();
    await timers.advance(60_000);
    await engine.idle();
    expect(ran).toEqual(['2026-01-01T00:01:00.000Z']);

    expect(engine.setEnabled('audit.verify-chain', false)).toBe(true);
    expect(engine.isEnabled('audit.verify-chain')).toBe(false);
    expect(timers.pending).toEqual([]);
    await timers.advance(3 * 60_000);
    await engine.idle();
    expect(ran).toEqual(['2026-01-01T00:01:00.000Z']);

    engine.setEnabled('audit.verify-chain', true);
    await timers.advance(60_000);
    await engine.idle();
    expect(ran).toEqual(['2026-01-01T00:01:00.000Z', '2026-01-01T00:05:00.000Z']);
    expect(engine.setEnabled('audit.nobody', false)).toBe(false);
    expect(engine.isEnabled('audit.nobody')).toBe(false);
    await engine.stop();
  });
});
