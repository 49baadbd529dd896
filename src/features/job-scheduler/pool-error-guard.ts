import type { DataSource } from 'typeorm';

interface EventSource {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}

const isEventSource = (value: unknown): value is EventSource =>
  typeof value === 'object' && value !== null && typeof (value as { on?: unknown }).on === 'function';

const guarded = new WeakSet<object>();
const ignore = (): void => undefined;

/**
 * Gives every new connection of the DataSource's pg pools an `'error'` listener for its whole
 * life, so that a connection lost at the wrong moment fails a statement instead of the process.
 *
 * node-postgres takes the pool's own listener off a client while it is checked out, and TypeORM
 * adds its listener only once the checkout has resolved, a microtask later. A FATAL error that
 * arrives in the same TCP chunk as the ReadyForQuery completing a new connection
 * (`pg_terminate_backend`, a server restart at that moment) is emitted in between, and an
 * `'error'` event without a listener is an uncaught exception. With this listener the error
 * still fails the statement (node-postgres marks the client unusable, the pool discards it on
 * release); it no longer ends the process.
 *
 * Returns whether a pool was found: before the DataSource is initialized there is none yet.
 */
export const guardPoolConnections = (dataSource: DataSource): boolean => {
  const driver = (dataSource as { driver?: { master?: unknown; slaves?: unknown } }).driver;
  const replicas = Array.isArray(driver?.slaves) ? (driver.slaves as unknown[]) : [];
  const pools = [driver?.master, ...replicas].filter(isEventSource);
  for (const pool of pools) {
    if (guarded.has(pool)) continue;
    guarded.add(pool);
    pool.on('connect', (client: unknown) => {
      if (isEventSource(client)) client.on('error', ignore);
    });
  }
  return pools.length > 0;
};
