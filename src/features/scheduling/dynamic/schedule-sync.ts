import type { JobScheduleEngine } from '../job-schedule-engine';
import type { JobHandler } from '../occurrence/occurrence-runner';
import type { SchedulerLogger, SchedulerTimers } from '../scheduler-ports';
import { type DeclarationMemo, declarationOfSchedule } from './dynamic-schedule-input';
import { TOMBSTONE_RETENTION_MS, type StoredScheduleRow } from './dynamic-schedule.sql';
import type { DynamicScheduleStore } from './dynamic-schedule.store';
import { PeriodicTask } from '../timers/periodic-task';

/** Rows read per statement at boot and per change poll. */
const PAGE = 5_000;

/** A schedule's state as this instance last applied it: removed, or its version. */
export type ScheduleChange = Pick<StoredScheduleRow, 'id' | 'version'> & ({ removed: true } | StoredScheduleRow);

/**
 * Keeps the engine's dynamic schedules equal to the table: all of them at boot, then every change
 * (of any instance) found by one indexed read of the versions above the last one seen, each poll.
 * A change is applied once, in version order; this instance's own writes are applied at once.
 *
 * What it remembers is bounded by the live schedules: a removed id is kept (a tombstone) only
 * until the polls have read past its removal. From then on no read returns an older state of it,
 * and a change the polls have read past, of an id not kept, is stale by construction: the polls
 * applied that id's later state (or its removal) already.
 */
export class ScheduleSync {
  /** The greatest version this instance has read in order (the polls go on from it); it never goes back. */
  private version = '0';
  /** The same, as a number (compared with each row read). */
  private versionNumber = 0n;
  /** Per live schedule (run here or not), the version last applied: an older row (a poll behind a local write) is ignored. */
  private readonly applied = new Map<string, bigint>();
  /** Per removed schedule, its removal's version, until the polls have read past it. */
  private readonly tombstones = new Map<string, bigint>();
  private readonly unknownHandlers = new Set<string>();
  /** The change poll, every pollMs. */
  private readonly periodic: PeriodicTask;
  private lastPolledAt = 0;

  constructor(
    private readonly store: DynamicScheduleStore,
    private readonly engine: JobScheduleEngine,
    private readonly handlers: ReadonlyMap<string, JobHandler>,
    private readonly timers: SchedulerTimers,
    private readonly logger: SchedulerLogger,
    pollMs: number,
  ) {
    this.periodic = new PeriodicTask(
      timers,
      pollMs,
      () => this.poll(),
      (error) => logger.warn(`Could not read the changes of dynamic schedules: ${String(error)}`),
      true,
    );
  }

  /** Boot: every stored schedule into the engine, before it starts. A few statements for any number of schedules. */
  async load(): Promise<number> {
    const version = await this.store.currentVersion();
    let loaded = 0;
    const memo: DeclarationMemo = new Map();
    await this.forEachLive(async (row) => {
      if (await this.apply(row, memo)) loaded++;
    });
    // Only now: until then no version is "read past", and every row listed applies.
    this.readUpTo(version);
    this.forgetPassedRemovals();
    this.lastPolledAt = this.timers.now();
    return loaded;
  }

  /** Schedules whose version this instance keeps: the live ones, and removals the polls have not read past yet. */
  get trackedCount(): number {
    return this.applied.size + this.tombstones.size;
  }

  /** Polls every `pollMs` from now on. */
  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** Reads and applies every change since the last one seen (one statement when nothing changed). */
  async poll(): Promise<void> {
    // Tombstones stay TOMBSTONE_RETENTION_MS: an instance that could not read for half of that reloads everything.
    if (this.timers.now() - this.lastPolledAt > TOMBSTONE_RETENTION_MS / 2) return this.reload();
    const memo: DeclarationMemo = new Map();
    for (;;) {
      const rows = await this.store.changesSince(this.version, PAGE);
      for (const row of rows) {
        await this.apply(row, memo);
        this.readUpTo(row.version);
      }
      this.forgetPassedRemovals();
      if (rows.length < PAGE) break;
    }
    this.lastPolledAt = this.timers.now();
  }

  /**
   * Applies one schedule's state if it is newer than what this instance applied: runs it (or
   * keeps it without timers when disabled), changes it, or forgets it. True if it now runs here.
   */
  async apply(change: ScheduleChange, memo?: DeclarationMemo): Promise<boolean> {
    const version = BigInt(change.version);
    const previous = this.applied.get(change.id) ?? this.tombstones.get(change.id);
    if (previous === undefined ? version <= this.versionNumber : previous >= version) return false;
    if (change.removed) {
      this.applied.delete(change.id);
      if (version > this.versionNumber) this.tombstones.set(change.id, version);
      else this.tombstones.delete(change.id);
      this.engine.remove(change.id);
      return false;
    }
    this.tombstones.delete(change.id);
    this.applied.set(change.id, version);
    const row = change;
    const handler = this.handlers.get(row.handler);
    if (!handler) {
      this.engine.remove(row.id);
      if (!this.unknownHandlers.has(row.handler)) {
        this.unknownHandlers.add(row.handler);
        this.logger.warn(
          `Schedules of handler ${row.handler} are not run by this instance: it has no @ScheduleHandler('${row.handler}') (another instance may)`,
        );
      }
      return false;
    }
    try {
      await this.engine.upsert({ declaration: declarationOfSchedule(row, memo), handler, enabled: row.enabled });
    } catch (error) {
      this.engine.remove(row.id);
      this.logger.warn(`Schedule ${row.id} is not run by this instance: ${String(error)}`);
      return false;
    }
    return row.enabled;
  }

  /** After a long gap: the whole table again, and the schedules gone meanwhile forgotten. */
  private async reload(): Promise<void> {
    const version = await this.store.currentVersion();
    const live = new Set<string>();
    const memo: DeclarationMemo = new Map();
    await this.forEachLive(async (row) => {
      live.add(row.id);
      await this.apply(row, memo);
    });
    // Gone before `version` (their tombstones may be purged: no poll would tell). A schedule
    // written here after it stays: the list may have passed its id before it came.
    const upTo = BigInt(version);
    const gone = (id: string) => !live.has(id) && (this.applied.get(id) ?? 0n) <= upTo;
    for (const key of this.engine.jobNames) if (gone(key)) this.engine.remove(key);
    for (const id of this.applied.keys()) if (gone(id)) this.applied.delete(id);
    this.readUpTo(version);
    this.forgetPassedRemovals();
    this.lastPolledAt = this.timers.now();
  }

  /** Every change up to `version` has been read: the polls go on from there (the cursor never goes back). */
  private readUpTo(version: string): void {
    const number = BigInt(version);
    if (number > this.versionNumber) {
      this.version = version;
      this.versionNumber = number;
    }
  }

  /** Removals at or below the cursor: no read returns an older state of those ids any more. */
  private forgetPassedRemovals(): void {
    const upTo = this.versionNumber;
    for (const [id, removedAt] of this.tombstones) if (removedAt <= upTo) this.tombstones.delete(id);
  }

  private async forEachLive(each: (row: StoredScheduleRow) => Promise<void>): Promise<void> {
    let after: string | null = null;
    for (;;) {
      const rows = await this.store.list({ handler: null, tenantId: null, enabled: null, after, limit: PAGE });
      for (const row of rows) await each(row);
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1].id;
    }
  }
}
