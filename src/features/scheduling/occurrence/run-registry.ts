import { JobShutdownError } from '../../job-scheduler/job-scheduler.errors';
import type { JobLease } from '../../job-scheduler/job-scheduler.types';
import type { LeaseHold } from '../../job-scheduler/run/lease-hold';
import type { SchedulerLease, SchedulerLogger, SchedulerTimers } from '../scheduler-ports';

/** One run whose handler started here and has not settled, for shutdown. */
export interface ActiveJobRun {
  name: string;
  lease: JobLease;
  hold: LeaseHold;
  done: boolean;
  /** Told once the run has settled: set by shutdown only (no promise per run otherwise). */
  onDone?: () => void;
}

/** Once the run has settled (its handler returned and its lease was finalized, or it never started). */
const settledOf = (run: ActiveJobRun): Promise<void> =>
  run.done
    ? Promise.resolve()
    : new Promise<void>((resolve) => {
        const before = run.onDone;
        run.onDone = () => {
          before?.();
          resolve();
        };
      });

const ignore = (): void => undefined;

/**
 * What an instance's runs are doing, as its shutdown needs to know: the claims (and the proofs of
 * claims) in flight, the claims given back after the stop began, and the handlers running. `shutdown` waits for the
 * first two, aborts the third, waits for them up to the grace, then gives back the leases still
 * held: the pool may close once it resolves.
 */
export class RunRegistry {
  private readonly active = new Set<ActiveJobRun>();
  private readonly acquiring = new Set<Promise<unknown>>();
  /** Claims won after stop() began, being given back unrun. */
  private readonly givingBack = new Set<Promise<unknown>>();

  constructor(
    private readonly lease: SchedulerLease,
    private readonly timers: SchedulerTimers,
    private readonly logger: SchedulerLogger,
  ) {}

  /** A claim, or the fenced proof of one, in flight until `outcome` settles (it never rejects). */
  claiming(outcome: Promise<unknown>): void {
    this.acquiring.add(outcome);
    // One reaction (finally made two promises).
    void outcome.then(() => this.acquiring.delete(outcome));
  }

  /** A claim given back (handed over, or ended for a runNow) after the stop began: `given` never rejects. */
  async givenBack<T>(given: Promise<T>): Promise<T> {
    this.givingBack.add(given);
    const value = await given;
    this.givingBack.delete(given);
    return value;
  }

  /** A handler started. */
  started(run: ActiveJobRun): void {
    this.active.add(run);
  }

  /** A run settled (its lease finalized), or never started after all. */
  settled(run: ActiveJobRun): void {
    run.done = true;
    this.active.delete(run);
    run.onDone?.();
  }

  /** Aborts every run, waits up to the grace, then gives back the leases still held. */
  async shutdown(graceMs: number): Promise<void> {
    await Promise.allSettled([...this.acquiring]);
    // The runs whose claims just came back refuse to start and give them back (refuseStart): one
    // turn for them to begin, then wait for those statements, before the pool may close.
    await new Promise<void>((resolve) => setImmediate(resolve));
    await Promise.allSettled([...this.givingBack]);
    const running = [...this.active];
    for (const run of running) run.hold.abort(new JobShutdownError(run.lease.id));
    let cancel: () => void = ignore;
    const grace = new Promise<void>((resolve) => {
      cancel = this.timers.at(this.timers.now() + graceMs, resolve);
    });
    await Promise.race([Promise.all(running.map(settledOf)), grace]);
    cancel();
    await Promise.all(
      running
        .filter((run) => !run.done)
        .map((run) =>
          this.lease.fail(run.lease, { released: true, reason: 'shutdown' }).catch((error: unknown) => {
            this.logger.error(`Could not release the lease of ${run.name} on shutdown: ${String(error)}`);
          }),
        ),
    );
  }
}
