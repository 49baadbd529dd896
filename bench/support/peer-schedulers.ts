import { join } from 'node:path';

/**
 * The four ways of running "this job once per due instant across nodes" that the peers scenario
 * compares, each set up as its documentation recommends, each node on a pool of its own.
 */
export interface PeerNodesOptions {
  url: string;
  /** Independent nodes (each its own pool, scheduler and timers) started in this process. */
  nodes: number;
  /** Job names, e.g. job-0001. */
  jobs: readonly string[];
  /** A five-field UTC cron. */
  cron: string;
  poolSize: number;
  /**
   * Called when a job's handler starts, with the due instant (epoch ms) of the occurrence it runs,
   * as the peer tells it: a late run is charged to its own occurrence, not to the next minute's.
   */
  onRun(job: string, dueAt: number): void;
}

export type StopNodes = () => Promise<void>;

/** Starts a peer's nodes in this process; resolves with how to stop them. */
export type StartNodes = (options: PeerNodesOptions) => Promise<StopNodes>;

export interface PeerScheduler {
  name: string;
  description: string;
  /** Whether a run leaves a durable record (the exactly-once contract across restarts). */
  durable: boolean;
}

/** The five-field UTC cron due at each of `instants` (whole minutes) and at no other time near them. */
export const cronAt = (instants: readonly number[]): string => {
  const fields = (pick: (date: Date) => number) => [...new Set(instants.map((instant) => pick(new Date(instant))))].sort((a, b) => a - b).join(',');
  for (const instant of instants) {
    if (instant % 60_000 !== 0) throw new RangeError(`cronAt: ${new Date(instant).toISOString()} is not a whole minute`);
  }
  return [
    fields((date) => date.getUTCMinutes()),
    fields((date) => date.getUTCHours()),
    fields((date) => date.getUTCDate()),
    fields((date) => date.getUTCMonth() + 1),
    '*',
  ].join(' ');
};

/** Stops every case's nodes, each whatever the others do. */
export const stopAll =
  (stops: StopNodes[]): StopNodes =>
  async () => {
    await Promise.allSettled(stops.map((stop) => stop()));
  };

/** The worker entry that starts a peer's nodes (bench/support/peer-workers/<name>.ts): each loads only its own peer. */
export const workerEntryOf = (peer: PeerScheduler): string => join(__dirname, 'peer-workers', `${peer.name}.ts`);

export const PEER_SCHEDULERS: readonly PeerScheduler[] = [
  {
    name: 'ours',
    description:
      '@Scheduled(cron) in a Nest application context per node: TypeORM pool, JobSchedulerModule.forRoot({ nodeId }), SchedulingModule.forRoot() with its defaults',
    durable: true,
  },
  {
    name: 'pg-boss',
    description:
      'pg-boss 10: per node new PgBoss({ max: pool }) and start(); per job createQueue(name), schedule(name, cron, {}, { tz: UTC, singletonKey: name, singletonSeconds: 60 }) and work(name); other options at their defaults (cron checked every 30 s, queues polled every 2 s)',
    durable: true,
  },
  {
    name: 'graphile-worker',
    description:
      'graphile-worker 0.17: per node run({ pgPool, crontab, taskList }), one crontab line per job with ?id=<job>&jobKey=<job>; other options at their defaults (concurrency 1, pollInterval 2 s)',
    durable: true,
  },
  {
    name: 'advisory-lock',
    description:
      'hand-rolled: per node and job a croner timer on the cron; when it fires, a session pg_try_advisory_lock(hash(job:minute)) on a pooled connection, the handler, pg_advisory_unlock (no durable record)',
    durable: false,
  },
];
