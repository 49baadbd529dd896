import type { JobExecutionLease, JobSchedulerService } from '../../src/features';
import { workFor } from '../support/abortable-work';
import { unitOf } from '../chaos/chaos.random';
import { summarizeError } from './failover.error-text';
import type { FailoverEventLog } from './failover.event-log';
import { type FailoverNodeSettings, type NodeMessage, runKeyOf } from './failover.protocol';
import type { TokenLeakDetector } from './failover.token-leaks';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** What a completed run returns (and runExclusive hands back): which acquisition it was. */
export interface FailoverRunResult {
  nodeId: string;
  acq: number;
  workMs: number;
}

/**
 * One node of the proof. Every `tickMs` (aligned on the wall clock, so that every node names the
 * same tick the same way) it calls runExclusive for that tick. When runExclusive throws (the
 * database is unreachable, the lease was lost), the node tries the tick again after a short
 * pause, until runExclusive answers (acquired or not) or the give-up horizon passes: no tick is
 * lost merely because every node's attempt fell into the outage. The callback works for a
 * random 0.5 to 3 s and stops when its signal aborts.
 */
export class FailoverNode {
  private nextTick: number | undefined;
  private lastTick: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private idleSent = false;
  private acquisitions = 0;
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly settings: FailoverNodeSettings,
    private readonly jobs: JobSchedulerService,
    private readonly events: FailoverEventLog,
    private readonly leaks: TokenLeakDetector,
    private readonly send: (message: NodeMessage) => void,
  ) {}

  start(firstTickAt: number): void {
    this.nextTick = firstTickAt;
    this.ticking = true;
    this.schedule();
  }

  stopTicks(lastTickAt: number): void {
    this.lastTick = lastTickAt;
    this.fireDue();
  }

  /** Ticks still being tried (for the shutdown's wait). */
  get pendingTicks(): number {
    return this.pending.size;
  }

  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  private schedule(): void {
    clearTimeout(this.timer);
    if (!this.ticking || this.nextTick === undefined) return;
    this.timer = setTimeout(() => this.fireDue(), Math.max(0, this.nextTick - Date.now()));
  }

  /** Fires every tick that is due (several, if the event loop was held up), then waits for the next. */
  private fireDue(): void {
    if (!this.ticking || this.nextTick === undefined) return;
    const now = Date.now();
    while (this.nextTick <= now && (this.lastTick === undefined || this.nextTick <= this.lastTick)) {
      this.fire(this.nextTick);
      this.nextTick += this.settings.tickMs;
    }
    if (this.lastTick !== undefined && this.nextTick > this.lastTick) {
      this.ticking = false;
      clearTimeout(this.timer);
      this.reportIdle();
      return;
    }
    this.schedule();
  }

  private fire(instant: number): void {
    const run = this.runTick(instant).finally(() => {
      this.pending.delete(run);
      this.reportIdle();
    });
    this.pending.add(run);
  }

  private reportIdle(): void {
    if (this.ticking || this.idleSent || this.pending.size > 0 || this.lastTick === undefined) return;
    this.idleSent = true;
    this.send({ type: 'idle' });
  }

  private async runTick(instant: number): Promise<void> {
    const { code, leaseMs, heartbeatMs, giveUpMs, retryMinMs, retryMaxMs, nodeId, seed } = this.settings;
    const tick = runKeyOf(instant);
    for (let attempt = 1; ; attempt++) {
      this.events.write({ type: 'attempt', tick, try: attempt });
      let started = false;
      try {
        const outcome = await this.jobs.runExclusive({ code, runKey: tick, leaseMs, heartbeatMs }, async (lease) => {
          started = true;
          return this.work(tick, attempt, lease);
        });
        if (outcome.acquired) {
          const result = outcome.result as FailoverRunResult;
          this.events.write({ type: 'completed', tick, acq: result.acq, result });
        } else {
          this.events.write({ type: 'not-acquired', tick, try: attempt });
        }
        return;
      } catch (error) {
        this.leaks.scanError('run-exclusive-error', error);
        this.events.write({ type: 'attempt-error', tick, try: attempt, phase: started ? 'run' : 'acquire', error: summarizeError(error) });
        if (Date.now() - instant >= giveUpMs) {
          this.events.write({ type: 'gave-up', tick, tries: attempt });
          return;
        }
        await sleep(retryMinMs + unitOf(seed, 'retry', nodeId, tick, attempt) * (retryMaxMs - retryMinMs));
      }
    }
  }

  private async work(tick: string, attempt: number, lease: JobExecutionLease): Promise<FailoverRunResult> {
    const { nodeId, seed, workMinMs, workMaxMs } = this.settings;
    this.leaks.addToken(lease.ownerToken);
    this.leaks.addLeaseId(lease.id);
    const acq = ++this.acquisitions;
    this.events.write({ type: 'acquired', tick, try: attempt, acq, id: lease.id, fencingToken: Number(lease.fencingToken), attempt: lease.attempt });
    this.events.write({ type: 'callback-start', tick, acq });
    let ended = false;
    // Stays attached after the callback: an abort during finalization is recorded too.
    const onAbort = (): void => {
      const reason: unknown = lease.signal.reason;
      this.leaks.scanError('abort-reason', reason);
      this.events.write({ type: 'abort', tick, acq, duringCallback: !ended, reason: summarizeError(reason) });
    };
    if (lease.signal.aborted) onAbort();
    else lease.signal.addEventListener('abort', onAbort, { once: true });
    const workMs = Math.round(workMinMs + unitOf(seed, 'work', nodeId, tick, attempt) * (workMaxMs - workMinMs));
    try {
      await workFor(workMs, lease.signal);
    } catch (error) {
      ended = true;
      this.events.write({ type: 'callback-end', tick, acq, outcome: 'aborted' });
      throw error;
    }
    ended = true;
    this.events.write({ type: 'callback-end', tick, acq, outcome: 'worked' });
    return { nodeId, acq, workMs };
  }
}
