import { Client, type Pool } from 'pg';
import { announcementChannelOf, quoteIdentifier } from './job-scheduler.sql';
import { monotonicNow } from './run/lease-deadline';

/** A lock key heard won is forgotten this long after (ms): far longer than any claim ahead waits (60 s). */
export const HEARD_FOR_MS = 120_000;

/** After the listening connection failed, it is opened again after 1 s, doubling up to this. */
const MAX_RECONNECT_MS = 30_000;

/** What the listener logs: the connection lost and found again (never a payload: lock keys only, no owner token). */
export interface AnnouncementLogger {
  warn(message: string): void;
  log(message: string): void;
}

/**
 * The runs other instances announced they won (acquireMany `{ announce: true }`), heard on a
 * connection of this service's own that LISTENs to the table's channel: a claim of such a run
 * would lose to that row, so it is not sent (see JobSchedulerService.acquireMany).
 *
 * Only what was heard counts: a notification is delivered when the winning statement commits,
 * and never for a claim rolled back; while the connection is down (a failover, a pooler that does
 * not pass notifications) nothing is heard and every claim is sent, as without announcements. A
 * lock key is heard for HEARD_FOR_MS; a caller asks only about the recent past (see heardWithin).
 */
export class ClaimAnnouncements {
  /** Lock key → monotonic instant it was heard; in the order heard (the oldest are forgotten first). */
  private readonly heard = new Map<string, number>();
  private client: Client | undefined;
  private state: 'idle' | 'connecting' | 'listening' | 'closed' = 'idle';
  private reconnectMs = 1_000;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private lostLogged = false;
  /** The table's channel, resolved on the listening connection (see announcementChannelOf). */
  private channel: string | undefined;

  constructor(
    private readonly pool: () => Pool | undefined,
    /** The lease table, as the statements name it (qualified, or resolved through search_path). */
    private readonly table: string,
    private readonly logger: AnnouncementLogger,
    private readonly now: () => number = monotonicNow,
  ) {}

  /** Starts listening (once; again after a failure, by itself). Never throws: a failure is logged and retried. */
  start(): void {
    if (this.state !== 'idle') return;
    this.state = 'connecting';
    void this.connect();
  }

  /** Whether another instance announced `lockKey` won within the last `withinMs`. */
  heardWithin(lockKey: string, withinMs: number): boolean {
    const at = this.heard.get(lockKey);
    return at !== undefined && this.now() - at <= withinMs;
  }

  /** Stops listening and forgets what it heard. */
  async close(): Promise<void> {
    this.state = 'closed';
    clearTimeout(this.reconnectTimer);
    this.heard.clear();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const pool = this.pool();
    if (!pool) return this.retry(new Error('the pool is not initialized'));
    // The pool's own settings (host, credentials, TLS, search_path): one more connection, held while listening.
    const client = new Client({ connectionTimeoutMillis: 10_000, ...pool.options, keepAlive: true });
    this.client = client;
    client.on('error', (error) => this.lose(client, error));
    client.on('end', () => this.lose(client, new Error('the connection ended')));
    client.on('notification', ({ channel, payload }) => {
      if (channel === this.channel && payload) this.hear(payload);
    });
    try {
      await client.connect();
      const [{ channel }] = (await client.query<{ channel: string }>(`SELECT ${announcementChannelOf(this.table)} AS channel`)).rows;
      this.channel = channel;
      await client.query(`LISTEN ${quoteIdentifier(channel)}`);
    } catch (error) {
      return this.lose(client, error);
    }
    if (this.client !== client) return;
    // Never what keeps a process alive: its pool's connections and the scheduler's timers do that.
    (client as unknown as { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.();
    this.state = 'listening';
    this.reconnectMs = 1_000;
    if (this.lostLogged) this.logger.log('Listening to claim announcements again');
    this.lostLogged = false;
  }

  private hear(payload: string): void {
    // Handed over (expireMany): no longer a reason to skip a claim (it takes the row over).
    if (payload.startsWith('-')) {
      for (const lockKey of payload.slice(1).split(' ')) this.heard.delete(lockKey);
      return;
    }
    const at = this.now();
    for (const lockKey of payload.split(' ')) {
      // Moved to the end: the map stays in the order heard.
      this.heard.delete(lockKey);
      this.heard.set(lockKey, at);
    }
    for (const [lockKey, heardAt] of this.heard) {
      if (at - heardAt <= HEARD_FOR_MS) break;
      this.heard.delete(lockKey);
    }
  }

  private lose(client: Client, error: unknown): void {
    if (this.client !== client || this.state === 'closed') return;
    this.client = undefined;
    void client.end().catch(() => undefined);
    this.retry(error);
  }

  private retry(error: unknown): void {
    if (this.state === 'closed') return;
    this.state = 'connecting';
    if (!this.lostLogged) {
      const reason = error instanceof Error ? error.message : String(error);
      this.logger.warn(`Not listening to claim announcements (${reason}): every claim ahead is sent until the connection is back`);
      this.lostLogged = true;
    }
    this.reconnectTimer = setTimeout(() => void this.connect(), this.reconnectMs);
    this.reconnectTimer.unref();
    this.reconnectMs = Math.min(MAX_RECONNECT_MS, this.reconnectMs * 2);
  }
}
