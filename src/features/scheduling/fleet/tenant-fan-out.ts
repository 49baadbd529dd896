import { randomUuid } from '../../job-scheduler/random-uuid';
import type { JobAcquireResult } from '../../job-scheduler/job-scheduler.types';
import { occurrenceRunKey, runNowRunKey, tenantIdProblem } from '../occurrence/occurrence-keys';
import { HeldClaim } from '../occurrence/held-claim';
import { CLAIM_AGAIN_AFTER_MS, type JobHandler, mayClaimAgain, type OccurrenceRunner } from '../occurrence/occurrence-runner';
import { fromRandomOffset } from './random-walk';
import type { JobDeclaration } from '../schedule/job-declaration';
import type { SchedulerLease, SchedulerLogger, SchedulerTimers } from '../scheduler-ports';
import { JobTenantInvalidError } from '../scheduling.errors';
import type { JobExecution, JobRunRecord, TenantDirectory } from '../scheduling.types';

/** The most tenants one claim statement takes. */
export const MAX_TENANT_CLAIM = 100;
/** Claimed tenants wait at most about this long for a slot (less with a lease shorter than 4 s). */
const CLAIM_AHEAD_MS = 1_000;
/** A claim takes at most this share of the walk left (at least the slots): the tail is shared. */
const CLAIM_SHARE_OF_REST = 1 / 4;

/**
 * How the scheduler asks the directory for its tenants, wherever it needs them (a per-tenant
 * occurrence's runs; the claims of an occurrence nobody ran): the list as it is now, copied, the
 * call shown to the timers (a manual clock lets it finish). A directory that throws rejects.
 */
export const tenantLister = (directory: TenantDirectory, timers: SchedulerTimers) => async (): Promise<readonly unknown[]> => {
  const listing = Promise.resolve(directory.listTenants());
  timers.observe?.(listing);
  return [...(await listing)];
};

/** One occurrence of a per-tenant job, with the tenants the directory listed (unchecked). */
export interface TenantOccurrence {
  job: JobDeclaration;
  handler: JobHandler;
  scheduledAt: number;
  trigger: JobExecution['trigger'];
  tenants: readonly unknown[];
}

export interface TenantFanOutDependencies {
  lease: SchedulerLease;
  runner: OccurrenceRunner;
  logger: SchedulerLogger;
  random: () => number;
  /** Records one outcome (metrics, logs, listeners) and returns it. */
  emit(record: JobRunRecord): JobRunRecord;
}

interface PendingTenant {
  tenantId: string;
  runKey: string;
  correlationId: string;
}

interface ClaimedTenant extends PendingTenant {
  /** Held from the claim: heartbeated while the tenant waits for a slot. */
  claim: HeldClaim;
}

/**
 * Runs the tenants of per-tenant occurrences: up to `tenantConcurrency` at once on this instance,
 * their leases claimed in batches (one statement each), each tenant in a run of its own.
 */
export class TenantFanOut {
  private readonly active = new Set<TenantOccurrenceRun>();

  constructor(private readonly dependencies: TenantFanOutDependencies) {}

  async run(occurrence: TenantOccurrence): Promise<JobRunRecord[]> {
    const run = new TenantOccurrenceRun(this.dependencies, occurrence);
    this.active.add(run);
    try {
      return await run.run();
    } finally {
      this.active.delete(run);
    }
  }

  /** Claims nothing more, starts no more tenants, and hands the tenants claimed but not started over to the fleet. */
  async stop(): Promise<void> {
    await Promise.all([...this.active].map((run) => run.stop()));
  }
}

/**
 * One occurrence's tenants. Each instance walks the tenant list from its own random offset, so
 * instances start on different tenants and meet only where their stretches join; a claim takes
 * the next tenants of the walk, and the database gives each tenant to one instance.
 *
 * A claimed tenant waits for a free slot holding its lease (heartbeated, see HeldClaim), and
 * tenants claimed here are not run elsewhere, so claims run ahead only as far as the slots drain
 * within a second (a quarter of the lease if that is shorter), from the average run measured so
 * far (nothing ahead until one run has finished); a claim takes at most MAX_TENANT_CLAIM tenants
 * and a quarter of the walk left. Its lease is proven again right before it starts (the runner).
 */
class TenantOccurrenceRun {
  private readonly records: JobRunRecord[] = [];
  private readonly concurrency: number;
  private order: PendingTenant[] = [];
  private cursor = 0;
  private readonly queue: ClaimedTenant[] = [];
  private claiming: Promise<void> | undefined;
  private running = 0;
  /** Every started tenant's run, until its record is kept. */
  private readonly ending: Promise<void>[] = [];
  private stopped = false;
  private averageMs: number | undefined;
  private leaseMs: number | undefined;

  constructor(
    private readonly dependencies: TenantFanOutDependencies,
    private readonly occurrence: TenantOccurrence,
  ) {
    this.concurrency = occurrence.job.tenantConcurrency;
  }

  /**
   * Every tenant's record, in the directory's order (invalid tenants last): the first one is the
   * first valid tenant's, which one instance only ran (the one that reports missed occurrences).
   */
  async run(): Promise<JobRunRecord[]> {
    const listed = this.walk();
    const workers = Math.min(this.concurrency, this.order.length);
    await Promise.all(Array.from({ length: workers }, () => this.work()));
    await Promise.all([this.claiming, ...this.ending]);
    const position = (record: JobRunRecord) => (record.tenantId === undefined ? undefined : listed.get(record.tenantId)) ?? listed.size;
    return [...this.records].sort((a, b) => position(a) - position(b));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([this.handOver(this.queue.splice(0)), this.claiming]);
  }

  /**
   * Sets the walk: the valid tenants, once each, from a random offset; records the invalid ones
   * failed. Returns the valid tenants' positions in the directory's order.
   */
  private walk(): Map<string, number> {
    const { job, scheduledAt, trigger, tenants } = this.occurrence;
    const seen = new Set<string>();
    const valid: PendingTenant[] = [];
    for (const tenantId of tenants) {
      const problem = tenantIdProblem(tenantId);
      if (problem !== null) {
        const error = new JobTenantInvalidError(job.name, tenantId, problem);
        this.record({ ...this.base(typeof tenantId === 'string' ? tenantId : undefined), errorCode: error.code, error });
        continue;
      }
      const id = tenantId as string;
      if (seen.has(id)) continue;
      seen.add(id);
      const correlationId = randomUuid();
      const runKey = trigger === 'run-now' ? runNowRunKey(scheduledAt, correlationId, id) : occurrenceRunKey(scheduledAt, id);
      valid.push({ tenantId: id, runKey, correlationId });
    }
    this.order = fromRandomOffset(valid, this.dependencies.random);
    return new Map(valid.map((tenant, index) => [tenant.tenantId, index]));
  }

  /**
   * One slot: a tenant at a time. The slot is free once the tenant's handler has settled; its
   * lease is finalized behind (the completes of tenants ending close together share a statement).
   */
  private async work(): Promise<void> {
    for (let tenant = await this.next(); tenant; tenant = await this.next()) {
      this.running++;
      let settled: (ranMs: number) => void = () => undefined;
      const slotFree = new Promise<void>((resolve) => {
        settled = (ranMs) => {
          this.averageMs = this.averageMs === undefined ? ranMs : 0.8 * this.averageMs + 0.2 * ranMs;
          resolve();
        };
      });
      const ended = this.start(tenant, settled).then((record) => this.record(record));
      this.ending.push(ended);
      await Promise.race([slotFree, ended]);
      this.running--;
    }
  }

  /** The next claimed tenant, claiming when none waits; undefined when all are done (or stopped). */
  private async next(): Promise<ClaimedTenant | undefined> {
    for (;;) {
      if (this.stopped) return undefined;
      const claimed = this.queue.shift();
      if (claimed) {
        this.claimAhead();
        return claimed;
      }
      if (!this.claiming) {
        if (this.cursor >= this.order.length) return undefined;
        // Enough for every idle slot, or as far ahead as is safe.
        this.startClaim(Math.max(this.concurrency - this.running, this.safeAhead()));
      }
      await this.claiming;
    }
  }

  /** How many claimed tenants may wait: those the slots start soon (see the class comment). */
  private safeAhead(): number {
    if (this.averageMs === undefined || this.leaseMs === undefined) return 0;
    const horizonMs = Math.min(CLAIM_AHEAD_MS, this.leaseMs / 4);
    const drained = Math.floor((this.concurrency * horizonMs) / Math.max(this.averageMs, 1));
    const share = Math.max(this.concurrency, Math.ceil((this.order.length - this.cursor) * CLAIM_SHARE_OF_REST));
    return Math.min(MAX_TENANT_CLAIM, drained, share);
  }

  /** Refills the queue in the background once three quarters of it have started. */
  private claimAhead(): void {
    if (this.claiming || this.stopped || this.cursor >= this.order.length) return;
    const ahead = this.safeAhead();
    if (ahead > 0 && this.queue.length <= ahead / 4) this.startClaim(ahead - this.queue.length);
  }

  private startClaim(size: number): void {
    this.claiming = this.claim(Math.max(1, Math.min(size, MAX_TENANT_CLAIM))).finally(() => {
      this.claiming = undefined;
    });
  }

  /** One statement for the next `size` tenants of the walk (two if the first one's answer is lost: see acquire). */
  private async claim(size: number): Promise<void> {
    const batch = this.order.slice(this.cursor, this.cursor + size);
    this.cursor += batch.length;
    const clock = this.dependencies.runner.clock;
    const sentAt = clock.now();
    let results: JobAcquireResult[];
    try {
      results = await this.acquire(batch);
    } catch (error) {
      // The lock store cannot be reached: failed, rather than run on every instance.
      for (const tenant of batch) this.record({ ...this.base(tenant.tenantId, tenant.correlationId), errorCode: 'JOB_LEASE_UNAVAILABLE', error });
      return;
    }
    const claimed: ClaimedTenant[] = [];
    batch.forEach((tenant, index) => {
      const lock = results[index];
      if (lock?.acquired) claimed.push({ ...tenant, claim: new HeldClaim(this.dependencies.lease, clock, lock, sentAt, tenant.correlationId) });
      else this.record({ ...this.base(tenant.tenantId, tenant.correlationId), outcome: 'skipped-locked' });
    });
    this.leaseMs ??= claimed[0]?.claim.lock.leaseMs;
    if (this.stopped) await this.handOver(claimed);
    else this.queue.push(...claimed);
  }

  /**
   * Claims these tenants' leases. Each under an owner token drawn here (acquireMany, where the
   * lease has it): a claim whose answer is lost (a dropped connection, no answer within the
   * statement timeout) may have committed, so it is sent once more naming the same tokens (`{
   * again }`), which gets back the tenants it won. Without that, their rows waited RUNNING for the
   * take-over, a lease late, and the tenants were recorded JOB_LEASE_UNAVAILABLE here. As the
   * runner's claims at the instant: only for a failure that can be transient (mayClaimAgain), after
   * CLAIM_AGAIN_AFTER_MS, and not once the stop began (the scheduler's stop ends the pause). The runs
   * won are held from the first claim's send (sentAt in claim): earlier than any row the retry can
   * return was written, so the holder's deadline comes before the database's.
   */
  private async acquire(batch: readonly PendingTenant[]): Promise<JobAcquireResult[]> {
    const { job } = this.occurrence;
    const { lease } = this.dependencies;
    if (!lease.acquireMany) {
      const runKeys = batch.map((tenant) => tenant.runKey);
      return lease.acquireBatch({ code: job.name, name: job.name, runKeys, leaseMs: job.leaseMs, reclaimFailed: false });
    }
    const runs = batch.map(({ runKey }) => ({ code: job.name, name: job.name, runKey, leaseMs: job.leaseMs, reclaimFailed: false, ownerToken: randomUuid() }));
    try {
      return await lease.acquireMany(runs);
    } catch (error) {
      if (!mayClaimAgain(error) || this.stopped || this.dependencies.runner.closed) throw error;
      await this.dependencies.runner.pause(CLAIM_AGAIN_AFTER_MS);
      if (this.stopped || this.dependencies.runner.closed) throw error;
      return lease.acquireMany(runs, { again: true });
    }
  }

  /** Runs a claimed tenant (the runner proves its lease again right before it starts). */
  private start(tenant: ClaimedTenant, onSettled: (ranMs: number) => void): Promise<JobRunRecord> {
    const { job, handler, scheduledAt, trigger } = this.occurrence;
    return this.dependencies.runner.run({ job, handler, scheduledAt, trigger, tenantId: tenant.tenantId, claim: tenant.claim, onSettled });
  }

  /**
   * Hands the tenants claimed but not started over to the fleet (stop): another instance's
   * take-over scan runs each. A runNow's tenants are given back instead (nobody takes them over).
   */
  private async handOver(tenants: ClaimedTenant[]): Promise<void> {
    if (tenants.length === 0) return;
    const claims = tenants.map((tenant) => tenant.claim);
    const { runner, logger } = this.dependencies;
    if (this.occurrence.trigger === 'run-now') {
      await runner.claims.end(claims, { released: true, reason: 'shutdown' });
      return;
    }
    const count = await runner.claims.handOver(claims);
    if (count > 0)
      logger.log(
        `${this.occurrence.job.name}: ${count} tenant(s) claimed but not started were handed over on shutdown: the take-over scan of an instance runs them`,
      );
  }

  /** A failed record of this occurrence for one tenant (outcome and error to be filled in). */
  private base(tenantId: string | undefined, correlationId?: string): JobRunRecord {
    const { job, scheduledAt, trigger } = this.occurrence;
    return { name: job.name, outcome: 'failed', scheduledAt: new Date(scheduledAt), trigger, tenantId, correlationId };
  }

  private record(record: JobRunRecord): void {
    this.records.push(this.dependencies.emit(record));
  }
}
