import { JobScheduleEngine } from '../../../src/features/scheduling/job-schedule-engine';
import { AheadClaims, MAX_CLAIM_STAGGER_MS, scaledClaimAheadMs } from '../../../src/features/scheduling/occurrence/ahead-claims';
import type { OccurrenceRunner } from '../../../src/features/scheduling/occurrence/occurrence-runner';
import { checkJobDeclaration } from '../../../src/features/scheduling/schedule/job-declaration';
import { ManualTimers } from '../../../src/features/scheduling/testing/manual-timers';
import type { JobAcquireOptions, JobAcquireResult, JobLease } from '../../../src/features';
import { FixedClock, InMemoryJobLease } from '../../../src/features/testing';

const MINUTE = 60_000;
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

describe('the lead of claims ahead, unless the application sets claimAheadMs', () => {
  it('is the default up to 20,000 jobs, then 0.15 ms per job, at most 60 s; 0 stays 0', () => {
    expect(scaledClaimAheadMs(3_000, 1_000)).toBe(3_000);
    expect(scaledClaimAheadMs(3_000, 20_000)).toBe(3_000);
    expect(scaledClaimAheadMs(3_000, 100_000)).toBe(15_000);
    expect(scaledClaimAheadMs(3_000, 1_000_000)).toBe(60_000);
    expect(scaledClaimAheadMs(0, 100_000)).toBe(0);
  });

  it('claims a job at most a quarter of its lease ahead, and never less than the default', () => {
    const claims = new AheadClaims(
      3_000,
      {} as OccurrenceRunner,
      silent,
      (work) => work,
      () => 15_000,
    );
    const holder = (leaseMs: number) => ({ job: { declaration: checkJobDeclaration('reports.hourly', { every: '1h', leaseMs }) }, occupancy: { running: 0 } });
    // Each within its stagger (see claim-stagger.test.ts): at most MAX_CLAIM_STAGGER_MS after its lead.
    const leadOf = (leaseMs: number) => {
      const claimAt = claims.claimTime(holder(leaseMs), 3_600_000, 0)!;
      expect(claimAt).toBeGreaterThan(3_600_000 - 60_000);
      return 3_600_000 - claimAt;
    };
    expect(leadOf(60_000)).toBeGreaterThan(15_000 - MAX_CLAIM_STAGGER_MS);
    expect(leadOf(60_000)).toBeLessThanOrEqual(15_000);
    expect(leadOf(20_000)).toBeGreaterThan(5_000 - MAX_CLAIM_STAGGER_MS);
    expect(leadOf(20_000)).toBeLessThanOrEqual(5_000);
    expect(leadOf(12_000)).toBeGreaterThan(3_000 - MAX_CLAIM_STAGGER_MS);
    expect(leadOf(12_000)).toBeLessThanOrEqual(3_000);
    // A lease shorter than 4 times the default: claimed at the instant, as before.
    expect(claims.claimTime(holder(10_000), 3_600_000, 0)).toBeNull();
  });

  it.each([
    { scales: true, leadMs: 1_500 },
    { scales: false, leadMs: 1_000 },
  ])(
    '10,000 jobs due together (scales: $scales): claimed from $leadMs ms ahead, all by half a second before the instant; stopped before the instant, every claim is handed over unrun',
    async ({ scales, leadMs }) => {
      const manual = new ManualTimers(new FixedClock(0));
      // Without observe(): the spread claims wait on these timers, which advance() fires in turn.
      const timers = { now: () => manual.now(), at: (instant: number, fn: () => void) => manual.at(instant, fn) };
      const lease = new CountingLease(manual.clock);
      const engine = new JobScheduleEngine({ timers, lease, logger: silent, claimAheadMs: 1_000, claimAheadScales: scales, random: () => 0.5 });
      const names = Array.from({ length: 10_000 }, (_, index) => `tenant.task-${index}`);
      let started = 0;
      for (const name of names) engine.register({ declaration: checkJobDeclaration(name, { every: '1m' }), handler: () => void started++, enabled: true });
      await engine.start();

      await manual.advance(MINUTE - leadMs - 50);
      expect(lease.claimed).toBe(0);
      // The first statements go out at the lead, staggered within what it has to spare beyond half of
      // it and half a second (for the scaled lead, 250 ms: before 59 s, the unscaled one's lead).
      await manual.advance(50 + (leadMs / 2 - 500) + 50);
      await new Promise((resolve) => setImmediate(resolve));
      expect(lease.claimed).toBeGreaterThan(0);
      // All within half of it, half a second before the instant.
      await manual.advance(MINUTE - 500 - manual.now());
      await new Promise((resolve) => setImmediate(resolve));
      expect(lease.claimed).toBe(names.length);
      // Stopped within the lead, before the instant: nothing runs here, every claim goes back to the fleet.
      await engine.stop();
      expect(lease.handedOver).toBe(names.length);
      await manual.advance(MINUTE);
      expect(started).toBe(0);
    },
  );
});

/** Counts the runs it lets acquire and hands over (statusOf reads every row: 10,000 of them, 10,000 times, is too slow). */
class CountingLease extends InMemoryJobLease {
  claimed = 0;

  override async acquireMany(runs: readonly JobAcquireOptions[]): Promise<JobAcquireResult[]> {
    const results = await super.acquireMany(runs);
    this.claimed += results.filter((result) => result.acquired).length;
    return results;
  }

  handedOver = 0;

  override async expireMany(leases: readonly JobLease[]): Promise<boolean[]> {
    const results = await super.expireMany(leases);
    this.handedOver += results.filter(Boolean).length;
    return results;
  }
}
