// Past ~350 lines on purpose: a job's path from registration and its timer to the due-instant policy (claim ahead, catch-up, missed, take-over) reads top to bottom here; how an occurrence then enters (overlap, jitter, its run or its tenants') is occurrence/occurrence-admission.ts.
import { AheadClaims, lostAheadRecord, scaledClaimAheadMs } from './occurrence/ahead-claims';
import { AbandonedOccurrenceScan, DEFAULT_TAKE_OVER_SCAN_MS, type TakenOverOccurrence } from './occurrence/abandoned-occurrences';
import { claimsAhead, withClaimBatching } from './fleet/claim-batcher';
import { coalescedTimers } from './timers/coalesced-timers';
import { withFinalizeBatching } from './fleet/finalize-batcher';
import { withHandOverBatching } from './fleet/hand-over-batcher';
import { withHeartbeatBatching } from './fleet/heartbeat-batcher';
import { JitterWaits } from './timers/jitter-waits';
import { type AheadClaim, HeldClaim } from './occurrence/held-claim';
import { JobOccupancy } from './occurrence/job-occupancy';
import { OccurrenceAdmission } from './occurrence/occurrence-admission';
import { UnrunOccurrences } from './occurrence/unrun-occurrences';
import { type JobHandler, OccurrenceRunner } from './occurrence/occurrence-runner';
import { RunRecords } from './records/run-records';
import { dueCountSince, type DueSince, dueInstantsSince } from './schedule/due-instants';
import { checkJitterBelowTolerance, type JobDeclaration, jobKeyOf } from './schedule/job-declaration';
import {
  latestOccurrencesOf,
  type AbandonedOccurrenceStore,
  holdClockOf,
  observedLease,
  type SchedulerHistory,
  type SchedulerLease,
  type SchedulerLogger,
  type SchedulerMetrics,
  type SchedulerTimers,
} from './scheduler-ports';
import { schedulingErrors } from './scheduling.errors';
import { TenantFanOut, tenantLister } from './fleet/tenant-fan-out';
import type { JobExecution, JobRunListener, JobRunRecord, TenantDirectory } from './scheduling.types';

export interface EngineJob {
  declaration: JobDeclaration;
  handler: JobHandler;
  /** false: registered without timers. */
  enabled: boolean;
}

export interface EngineOptions {
  timers: SchedulerTimers;
  lease: SchedulerLease;
  logger: SchedulerLogger;
  history?: SchedulerHistory;
  tenants?: TenantDirectory;
  metrics?: SchedulerMetrics;
  /** An occurrence reached later than this is missed. Default 60 s. */
  lateToleranceMs?: number;
  /** On stop: how long running jobs get after their signal aborts. Default 10 s. */
  shutdownGraceMs?: number;
  /** For jitter; defaults to Math.random. */
  random?: () => number;
  /** How many recent records `runs` keeps. Default 1,000. */
  historySize?: number;
  /** A job failing with the same error is summarized at most this often. Default 60 s. */
  failureLogIntervalMs?: number;
  /** Where occurrences whose holder vanished are found: with it, they are taken over (abandoned-occurrences.ts). */
  abandoned?: AbandonedOccurrenceStore;
  /** How often this instance looks for them. Default 30 s. */
  takeOverScanMs?: number;
  /**
   * Claim each occurrence's lease this long before its due instant (0: at the due instant, the
   * default): the claims of occurrences due together go out together ahead of time, so that the
   * runs start at their instant. A claimed occurrence that will not run (stop, removal, overlap)
   * is given back FAIL `{ released: true }`. Global jobs whose overlap is 'skip' only, and whose
   * lease is at least 4 times this (the lease runs from the claim). At most 60 s.
   */
  claimAheadMs?: number;
  /**
   * claimAheadMs is a default, not a setting of the application's: the lead grows with the jobs
   * registered (scaledClaimAheadMs: thousands due together take seconds to claim), each job's
   * within a quarter of its lease.
   */
  claimAheadScales?: boolean;
}

const newJobState = (job: EngineJob): JobState => ({ job, lastDue: Number.NEGATIVE_INFINITY, occupancy: new JobOccupancy() });

/** How many jobs' after-instant work (see fire) one turn of the event loop does. */
const AFTER_STARTS_CHUNK = 1_000;

type DueInstants = DueSince & { latest: number };

interface JobState {
  job: EngineJob;
  cancel?: () => void;
  /** The last due instant this instance handled; a due instant is never handled twice. */
  lastDue: number;
  /** Its runs here, as the overlap policy counts them. */
  occupancy: JobOccupancy<{ scheduledAt: number; trigger: JobExecution['trigger'] }>;
  /** The next occurrence's lease, claimed ahead (claimAheadMs). */
  ahead?: AheadClaim;
}

/**
 * The scheduler without Nest: timers per job, overlap and missed policies, tenancy, outcomes.
 * Every instance computes the same due instants; the lease decides which one runs each.
 */
export class JobScheduleEngine {
  private readonly states = new Map<string, JobState>();
  private readonly records: RunRecords;
  private readonly runner: OccurrenceRunner;
  private readonly tenantFanOut: TenantFanOut;
  private readonly inFlight = new Set<Promise<unknown>>();
  /** How the occurrences that do not run here end (handed over, recorded missed or skipped). */
  private readonly unrun: UnrunOccurrences;
  /** How a due occurrence enters: overlap policy, its claim, jitter, its run or its tenants' runs. */
  private readonly admission: OccurrenceAdmission;
  /** Work of due instants that waits for their runs to start (see fire). */
  private readonly deferred: Array<() => void> = [];
  private started = false;
  private startedAt: number | undefined;

  private readonly lease: SchedulerLease;
  /** The occurrences claimed claimAheadMs before their instant. */
  private readonly ahead: AheadClaims;
  private readonly takeOvers?: AbandonedOccurrenceScan<JobDeclaration>;
  /** Jitter waits in progress: stop() cancels them, so that no run starts after it. */
  private readonly jitter: JitterWaits;
  /** The jobs' timers: one per instant, however many jobs are due at it. */
  private readonly at: SchedulerTimers['at'];

  constructor(private readonly options: EngineOptions) {
    const random = () => (options.random ?? Math.random)();
    // The occurrences due at one instant are claimed together (a few statements, not one each).
    const aheadMs = options.claimAheadMs ?? 0;
    const lead = options.claimAheadScales ? () => scaledClaimAheadMs(aheadMs, this.states.size) : () => aheadMs;
    this.at = coalescedTimers(options.timers);
    // Spread claims are paced on one clock (monotonic; the manual one in tests): a wall-clock step does not stretch them.
    const clock = holdClockOf(options.timers);
    const wait = (ms: number) => new Promise<void>((resolve) => void clock.after(ms, resolve));
    const ahead = aheadMs > 0 ? { shape: () => claimsAhead(lead()), wait, now: () => clock.now() } : undefined;
    // Claims, heartbeats, finalizations and hand-overs asked together go to the database together.
    const claims = withClaimBatching(options.lease, random, ahead);
    this.lease = observedLease(withHandOverBatching(withHeartbeatBatching(withFinalizeBatching(claims))), options.timers);
    this.records = new RunRecords(options);
    this.runner = new OccurrenceRunner(this.lease, options.timers, options.logger);
    this.jitter = new JitterWaits(options.timers, options.random);
    this.ahead = new AheadClaims(aheadMs, this.runner, options.logger, (work) => this.track(work), lead, random);
    const listTenants = options.tenants && tenantLister(options.tenants, options.timers);
    this.unrun = new UnrunOccurrences({
      runner: this.runner,
      ahead: this.ahead,
      records: this.records,
      timers: options.timers,
      logger: options.logger,
      history: options.history,
      lateToleranceMs: options.lateToleranceMs ?? 60_000,
      track: (work) => this.track(work),
      current: (holder) => this.states.get(jobKeyOf(holder.job.declaration)) === holder,
      listTenants,
    });
    if (options.abandoned) {
      const periodMs = options.takeOverScanMs ?? DEFAULT_TAKE_OVER_SCAN_MS;
      if (!Number.isSafeInteger(periodMs) || periodMs < 1) throw schedulingErrors.invalidOption('takeOverScanMs', 'a whole number of ms, 1 or more', periodMs);
      const host = {
        enabledJobs: () => [...this.states.values()].filter((state) => state.job.enabled).map((state) => state.job.declaration),
        // A global job running here claims none of its occurrences meanwhile (a tenant's runs side by side).
        busy: (job: JobDeclaration) => job.tenancy === 'global' && (this.states.get(jobKeyOf(job))?.occupancy.running ?? 0) > 0,
        takeOver: (job: JobDeclaration, occurrence: TakenOverOccurrence) => this.takeOver(jobKeyOf(job), occurrence),
        record: (record: JobRunRecord) => void this.records.emit(record),
      };
      this.takeOvers = new AbandonedOccurrenceScan(options.abandoned, host, options.timers, options.logger, periodMs, options.lateToleranceMs ?? 60_000);
    }
    this.tenantFanOut = new TenantFanOut({
      lease: this.lease,
      runner: this.runner,
      logger: options.logger,
      random,
      emit: (record) => this.records.emit(record),
    });
    this.admission = new OccurrenceAdmission({
      runner: this.runner,
      ahead: this.ahead,
      unrun: this.unrun,
      records: this.records,
      jitter: this.jitter,
      tenantFanOut: this.tenantFanOut,
      listTenants,
      track: (work) => this.track(work),
      running: () => this.started,
    });
  }

  /** Adds a job before start (a declared job, a stored schedule at boot). Keyed by jobKeyOf. */
  register(job: EngineJob): void {
    const key = jobKeyOf(job.declaration);
    if (this.states.has(key)) throw schedulingErrors.duplicate(key, 'an earlier registration', 'another');
    if (job.declaration.tenancy === 'per-tenant' && !this.options.tenants) throw schedulingErrors.noTenants(job.declaration.name);
    checkJitterBelowTolerance(job.declaration, this.options.lateToleranceMs ?? 60_000);
    this.states.set(key, newJobState(job));
  }

  /**
   * Adds, changes or disables a job while the scheduler runs (a dynamic schedule). A changed job
   * keeps the due instants it handled (none is handled twice) and follows its new schedule from
   * now. A job added or enabled now starts from now: what passed while it was off is not replayed,
   * except that with `missed: 'run-once'` the latest occurrence since its last recorded one runs
   * once. A run in progress finishes either way.
   */
  async upsert(job: EngineJob): Promise<void> {
    const key = jobKeyOf(job.declaration);
    checkJitterBelowTolerance(job.declaration, this.options.lateToleranceMs ?? 60_000);
    const state = this.states.get(key);
    const wasEnabled = state?.job.enabled ?? false;
    if (state) {
      state.cancel?.();
      state.cancel = undefined;
      // The claim's row is under the old name (its code): under a new one (a schedule moved to
      // another handler) the occurrence is another row, which other instances claim.
      const sameCode = state.job.declaration.name === job.declaration.name;
      state.job = job;
      // An occurrence claimed ahead runs by the new definition if it is still one of its instants.
      const still = state.ahead && job.enabled && sameCode && job.declaration.schedule.next(state.ahead.scheduledAt - 1) === state.ahead.scheduledAt;
      const kept = still && this.ahead.appliesTo(job.declaration);
      // Still one of its instants, but not claimed ahead by the new definition: handed over (it is
      // claimed again at its instant), not ended (a row ended FAIL is never claimed again: lost).
      if (still && !kept) void this.ahead.handOver([state], 'schedule changed');
      else if (!kept) void this.ahead.release([state], 'schedule changed');
    } else {
      const created = newJobState(job);
      // Created again under the key of a job removed here: an instant whose claim ahead the
      // removal ended is claimed again, as for a job resumed.
      this.ahead.adopt(created, key);
      this.states.set(key, created);
    }
    const current = this.states.get(key) as JobState;
    if (!job.enabled || !this.started) return;
    const now = this.options.timers.now();
    if (!wasEnabled) current.lastDue = now;
    this.arm(current);
    this.takeOvers?.start();
    // Enabled again: what passed while it was off is not reported missed; run-once runs the latest.
    // An instant whose claim ahead this instance ended when the job went off is not a run: its row
    // must not hide it (the run claims it again over that row).
    const released = this.ahead.releasedBy(current, now);
    if (!wasEnabled && job.declaration.missed === 'run-once') await this.catchUp([current], now, false, released === undefined ? now : released - 1);
  }

  /** Forgets a job (a dynamic schedule removed): no occurrence of it starts from now; a run in progress finishes. */
  remove(key: string): void {
    const state = this.states.get(key);
    if (!state) return;
    state.cancel?.();
    state.occupancy.queued = undefined;
    void this.ahead.release([state], 'schedule removed');
    this.ahead.forget(state, key);
    this.states.delete(key);
  }

  /** The job registered under this key (jobKeyOf), if any. */
  job(key: string): EngineJob | undefined {
    return this.states.get(key)?.job;
  }

  get jobNames(): string[] {
    return [...this.states.keys()];
  }

  /** Every registered job's declaration, enabled or not. */
  get declarations(): JobDeclaration[] {
    return [...this.states.values()].map((state) => state.job.declaration);
  }

  /** Recent outcomes on this instance, oldest first. */
  get runs(): readonly JobRunRecord[] {
    return this.records.recent;
  }

  onRun(listener: JobRunListener): () => void {
    return this.records.onRun(listener);
  }

  /** Arms every enabled job's timer, after recording (or catching up) what was missed meanwhile. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.runner.closed = false;
    const now = this.options.timers.now();
    this.startedAt = now;
    this.takeOvers?.start();
    for (const state of this.states.values()) {
      if (!state.job.enabled) continue;
      state.lastDue = now;
      this.arm(state);
    }
    await this.catchUp(
      [...this.states.values()].filter((state) => state.job.enabled),
      now,
    );
  }

  /** Stops the timers, aborts running jobs, waits the grace and releases their leases. */
  async stop(): Promise<void> {
    this.started = false;
    // Nothing starts after this: a run acquired meanwhile gives its lease back unrun.
    this.runner.close();
    const claimedAhead: JobState[] = [];
    for (const state of this.states.values()) {
      state.cancel?.();
      state.cancel = undefined;
      state.occupancy.queued = undefined;
      if (state.ahead) claimedAhead.push(state);
    }
    // Claims held by runs waiting for their jitter are handed over with the others.
    const released = Promise.all([this.ahead.handOver(claimedAhead), this.ahead.handOverClaims(this.jitter.cancelAll())]);
    // Occurrences skipped here as overlapping, still unchecked: handed over if nobody claimed them.
    const checked = this.unrun.stop();
    await this.takeOvers?.stop();
    await Promise.all([released, checked, this.tenantFanOut.stop(), this.runner.shutdown(this.options.shutdownGraceMs ?? 10_000)]);
  }

  /** Runs the job now, whatever its schedule; scheduledAt is the instant it was asked. */
  async runNow(name: string): Promise<JobRunRecord[]> {
    const state = this.states.get(name);
    if (!state) throw schedulingErrors.unknownJob(name);
    return this.track(this.admission.run(state, this.options.timers.now(), 'run-now'));
  }

  /**
   * Arms or disarms a registered job at runtime (a pause seen by every instance): disabled, its
   * timer is cancelled and a queued occurrence dropped (a run in progress finishes); enabled again,
   * it fires from the next due instant on (what fell due meanwhile is not run). false: unknown job.
   */
  setEnabled(name: string, enabled: boolean): boolean {
    const state = this.states.get(name);
    if (!state) return false;
    if (state.job.enabled === enabled) return true;
    state.job = { ...state.job, enabled };
    if (!enabled) {
      state.cancel?.();
      state.cancel = undefined;
      state.occupancy.queued = undefined;
      void this.ahead.release([state], 'paused');
    } else if (this.started) {
      state.lastDue = this.options.timers.now();
      this.arm(state);
    }
    return true;
  }

  /** Whether a registered job's timers run (false for an unknown job). */
  isEnabled(name: string): boolean {
    return this.states.get(name)?.job.enabled ?? false;
  }

  /**
   * For each enabled job: how many occurrences have been due since its last success (from
   * `lastSuccesses`, asked once for all jobs; or since this instance started, when there is
   * none), counted up to `cap`.
   */
  async dueSinceLastSuccess(
    lastSuccesses: (names: readonly string[]) => Promise<ReadonlyMap<string, number>>,
    cap = 3,
  ): Promise<{ name: string; lastSuccessAt: number | null; dueSince: number }[]> {
    const now = this.options.timers.now();
    const enabled = [...this.states.values()].filter((state) => state.job.enabled);
    const successes = await lastSuccesses(enabled.map((state) => state.job.declaration.name));
    return enabled.map((state) => {
      const lastSuccessAt = successes.get(state.job.declaration.name) ?? null;
      const dueSince = dueCountSince(state.job.declaration.schedule, lastSuccessAt ?? this.startedAt ?? now, now, cap);
      return { name: state.job.declaration.name, lastSuccessAt, dueSince };
    });
  }

  /** Resolves once every occurrence this instance started has settled. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0 || this.deferred.length > 0) {
      if (this.deferred.length > 0) await new Promise((resolve) => setImmediate(resolve));
      await Promise.all([...this.inFlight]);
    }
  }

  private arm(state: JobState): void {
    if (!this.started) return;
    const { timers } = this.options;
    const next = state.job.declaration.schedule.next(Math.max(state.lastDue, timers.now()));
    if (next === null) return;
    const due = (): void =>
      this.timer(state, next, () => {
        state.cancel = undefined;
        this.fire(state);
      });
    // Claimed ahead (see AheadClaims.claimTime), at its claim time or now; else at the instant.
    const now = timers.now();
    const claimAt = this.ahead.claimTime(state, next, now);
    if (claimAt === null) return due();
    if (claimAt <= now) {
      this.ahead.claim(state, next, now);
      return due();
    }
    this.timer(state, claimAt, () => {
      this.ahead.claim(state, next, timers.now());
      due();
    });
  }

  /**
   * Arms the job's timer: `state.cancel` cancels it until it fires. A timer whose instant has
   * passed may call back at once, from inside `at` (after a stall or a clock step): its cancel
   * function, returned after, is then stale and must not stand for the job's next timer (a
   * job whose `cancel` is set is not armed again: its timers would stop for good).
   */
  private timer(state: JobState, instant: number, fn: () => void): void {
    let fired = false;
    const cancel = this.at(instant, () => {
      fired = true;
      fn();
    });
    if (!fired) state.cancel = cancel;
  }

  /**
   * A timer fired: handle every due instant that has passed since the last one, once. The run
   * starts now; what else the instant asks of this job (recording an occurrence whose claim
   * ahead another instance won, arming the next instant) waits until the runs due with it have
   * started (see afterStarts): at 10,000 schedules due together, that work was the start delay.
   */
  private fire(state: JobState): void {
    const now = this.options.timers.now();
    const due = dueInstantsSince(state.job.declaration.schedule, state.lastDue, now);
    state.lastDue = Math.max(state.lastDue, now);
    // Claimed ahead for an instant that passed unrun (this instance stalled, or its clock stepped,
    // past the next one): nobody else can run it. Within the late tolerance it runs here (it takes
    // its claim synchronously, before the latest one is admitted); later, it is recorded missed.
    const passed = due.latest !== null && state.ahead && state.ahead.scheduledAt < due.latest ? state.ahead : undefined;
    if (passed && now - passed.scheduledAt <= (this.options.lateToleranceMs ?? 60_000)) {
      void this.track(this.admission.admit(state, passed.scheduledAt, 'schedule'));
    } else if (passed) {
      void this.track(this.unrun.passedClaim(state, this.ahead.take(state, passed.scheduledAt) as AheadClaim));
    }
    const lostAhead = state.ahead?.scheduledAt === due.latest && state.ahead?.settled?.kind === 'lost';
    // The occurrence takes its lease claimed ahead (synchronously) before the next one is armed.
    if (due.latest !== null && !lostAhead) void this.track(this.handleDue(state, due as DueInstants, now));
    this.afterStarts(() => {
      if (!this.started || this.states.get(jobKeyOf(state.job.declaration)) !== state) return;
      if (due.latest !== null && lostAhead) this.handleLostAhead(state, due as DueInstants, now);
      // Claimed ahead but not taken by a run (never expected): the fleet runs it, as a hand-over.
      if (state.ahead && state.ahead.scheduledAt <= now) void this.ahead.handOver([state], 'not started here');
      // Unless changed, paused or re-armed meanwhile.
      if (state.job.enabled && state.cancel === undefined) this.arm(state);
    });
  }

  /**
   * A due instant whose claim ahead another instance won: recorded skipped-locked here, as
   * handleDue → admit → runOccurrence record it, without their promises (on every instance, most
   * occurrences due together end so). Any other case (late, the job running here, its claim
   * changed meanwhile) takes that path.
   */
  private handleLostAhead(state: JobState, due: DueInstants, now: number): void {
    const { ahead, occupancy } = state;
    const onTime = now - due.latest <= (this.options.lateToleranceMs ?? 60_000);
    const lost = ahead?.scheduledAt === due.latest && ahead.settled?.kind === 'lost';
    if (!onTime || !lost || occupancy.overlaps(state.job.declaration.overlap) || occupancy.queued !== undefined) {
      void this.track(this.handleDue(state, due, now));
      return;
    }
    this.ahead.take(state, due.latest);
    this.records.emit(lostAheadRecord(state.job.declaration, due.latest, 'schedule', ahead));
  }

  /**
   * Runs `work` after the runs started in this turn have reached their handlers: in a later turn
   * of the event loop (after their promise callbacks), AFTER_STARTS_CHUNK at a time.
   */
  private afterStarts(work: () => void): void {
    if (this.deferred.push(work) > 1) return;
    const drain = (): void => {
      for (const next of this.deferred.splice(0, AFTER_STARTS_CHUNK)) {
        try {
          next();
        } catch (error) {
          this.options.logger.error(`Scheduling after a due instant failed: ${String(error)}`);
        }
      }
      if (this.deferred.length > 0) setImmediate(drain);
    };
    setImmediate(drain);
  }

  /**
   * After a restart: occurrences since the latest one any instance recorded are missed, or caught
   * up once. The history of every job is read at once (one statement on PostgreSQL), as of `now`:
   * the claims ahead armed before it may be written first, and the next instants may pass while
   * it is read (a slow database); either would otherwise hide the instants that passed before.
   */
  private async catchUp(states: JobState[], now: number, reportMissed = true, historyUntil = now): Promise<void> {
    let recorded: ReadonlyMap<string, number>;
    try {
      const lookup = latestOccurrencesOf(
        this.options.history,
        states.map((state) => jobKeyOf(state.job.declaration)),
        historyUntil,
      );
      this.options.timers.observe?.(lookup);
      recorded = await lookup;
    } catch (error) {
      this.options.logger.warn(`Could not read the history of ${states.length} job(s); missed occurrences are not checked: ${String(error)}`);
      return;
    }
    await Promise.all(
      states.map(async (state) => {
        const latest = recorded.get(jobKeyOf(state.job.declaration));
        if (latest === undefined) return;
        const due = dueInstantsSince(state.job.declaration.schedule, latest, now);
        if (due.latest !== null) await this.track(this.handleDue(state, due as DueInstants, now, reportMissed));
      }),
    );
  }

  /**
   * The latest due instant runs if it is reached within the tolerance (or, late, with
   * `missed: 'run-once'`); the ones before it, and a late one otherwise, are missed. Missed
   * occurrences are reported by the one instance that also ran (or recorded) the latest. A run
   * is started, not awaited: start() and timers never wait for a job.
   */
  private async handleDue(state: JobState, due: DueInstants, now: number, reportMissed = true): Promise<void> {
    const onTime = now - due.latest <= (this.options.lateToleranceMs ?? 60_000);
    if (onTime || state.job.declaration.missed === 'run-once') {
      const admitted = this.admission.admit(state, due.latest, onTime ? 'schedule' : 'catch-up');
      // Only an instant with missed ones before it has more to do once its run ended.
      if (!reportMissed || due.count <= 1) return void this.track(admitted);
      void this.track(
        admitted.then(async ([record]) => {
          if (record?.outcome !== 'skipped-locked') await this.unrun.before(state, due);
        }),
      );
      return;
    }
    await this.unrun.dropped(state, due);
  }

  /**
   * Runs an occurrence the take-over scan claimed (its holder vanished, or handed it over) here,
   * under that claim. false, unless the job is enabled and idle here and the scheduler runs: the
   * scan hands the claim back (the next scan, or another instance, takes it then).
   */
  private takeOver(key: string, { scheduledAt, tenantId, claim }: TakenOverOccurrence): boolean {
    const state = this.states.get(key);
    if (!state || !state.job.enabled || !this.started) return false;
    const { overlap, tenancy } = state.job.declaration;
    // One tenant's run goes side by side with the others, as in its fan-out; a global one only on an idle job.
    if (tenantId === undefined && state.occupancy.overlaps(overlap)) return false;
    const held = new HeldClaim(this.lease, this.runner.clock, claim.lock, claim.sentAt, claim.correlationId);
    if (tenantId !== undefined && tenancy === 'per-tenant') void this.track(this.admission.run(state, scheduledAt, 'take-over', tenantId, held));
    else void this.track(this.admission.admit(state, scheduledAt, 'take-over', tenantId, held));
    return true;
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    // One reaction for both ends (finally + catch made three promises per tracked one).
    const forget = (): void => void this.inFlight.delete(promise);
    void promise.then(forget, forget);
    return promise;
  }
}
