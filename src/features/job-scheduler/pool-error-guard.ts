import type { DataSource } from 'typeorm';

interface EventSource {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}

const isEventSource = (value: unknown): value is EventSource =>
  typeof value === 'object' && value !== null && typeof (value as { on?: unknown }).on === 'function';

const guarded = new WeakSet<object>();
const ignore = (): void => undefined;

/**
 * Gives every connection of the DataSource's pg pools, open or yet to open, an `'error'`
 * listener for its whole life, so that a connection lost at the wrong moment fails a statement
 * instead of the process.
 *
 * node-postgres takes the pool's own listener off a client while it is checked out, and TypeORM
 * adds its listener only once the checkout has resolved, a microtask later. A FATAL error that
 * arrives in the same TCP chunk as a ReadyForQuery (`pg_terminate_backend`, a server restart at
 * that moment) is emitted in between when that ReadyForQuery is the one completing a new
 * connection, or the one ending a `pool.query` statement whose client the pool hands straight to
 * a waiting TypeORM checkout. An `'error'` event without a listener is an uncaught exception.
 * With this listener the error still fails the statement (node-postgres marks the client
 * unusable, the pool discards it on release); it no longer ends the process.
 *
 * Returns whether a pool was found: before the DataSource is initialized there is none yet.
 */
export const guardPoolConnections = (dataSource: DataSource): boolean => {
  const driver = (dataSource as { driver?: { master?: unknown; slaves?: unknown } }).driver;
  const replicas = Array.isArray(driver?.slaves) ? (driver.slaves as unknown[]) : [];
  return guardPools([driver?.master, ...replicas]);
};

/** guardPoolConnections for pools given directly; returns whether any was an event source. */
export const guardPools = (candidates: unknown[]): boolean => {
  const pools = candidates.filter(isEventSource);
  for (const pool of pools) {
    if (guarded.has(pool)) continue;
    guarded.add(pool);
    const guard = (client: unknown): void => {
      if (isEventSource(client)) client.on('error', ignore);
    };
    pool.on('connect', guard);
    // Connections opened before (pg-pool keeps no public list of them).
    const open = (pool as { _clients?: unknown })._clients;
    if (Array.isArray(open)) open.forEach(guard);
  }
  return pools.length > 0;
};
