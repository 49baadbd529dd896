import { Client } from 'pg';
import { sleep } from '../chaos/chaos.admin';

/**
 * The orchestrator's own writes through HAProxy, each on a new connection: is there a primary
 * behind the proxy that takes a write, and which member is it (its port)? What fails on the way
 * is classified (connect or query phase, SQLSTATE or socket error), to show how clients see a
 * failover through HAProxy.
 */

const PROBE = `CREATE TABLE IF NOT EXISTS failover_probe ("id" bigserial PRIMARY KEY, "at" timestamptz NOT NULL DEFAULT clock_timestamp());
INSERT INTO failover_probe DEFAULT VALUES RETURNING inet_server_port() AS "port"`;

export type ProbeOutcome = { ok: true; port: number } | { ok: false; failure: string };

/** `phase: code message` (message cut short), or `phase: message` without a code. */
export const classifyFailure = (phase: 'connect' | 'query', error: unknown): string => {
  const code = (error as { code?: unknown } | null)?.code;
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0].slice(0, 80);
  return typeof code === 'string' ? `${phase}: ${code} ${message}` : `${phase}: ${message}`;
};

export const probeWrite = async (url: string): Promise<ProbeOutcome> => {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 1_500, query_timeout: 3_000, application_name: 'failover-probe' });
  client.on('error', () => undefined);
  let phase: 'connect' | 'query' = 'connect';
  try {
    await client.connect();
    phase = 'query';
    const results = (await client.query(PROBE)) as unknown as Array<{ rows: Array<{ port: number }> }>;
    const port = results[results.length - 1]?.rows[0]?.port;
    return { ok: true, port: Number(port) };
  } catch (error) {
    return { ok: false, failure: classifyFailure(phase, error) };
  } finally {
    await client.end().catch(() => undefined);
  }
};

export interface WritableOutcome {
  ok: boolean;
  /** From `since` to the first write that landed (on another port than `notOnPort`). */
  ms: number;
  port?: number;
  /** Failed probes by class. */
  failures: Record<string, number>;
}

/**
 * Probes every `intervalMs` until a write lands on a primary other than `notOnPort` (the old
 * leader, during a switchover still up), or `timeoutMs` after `since` has passed.
 */
export const untilWritable = async (
  url: string,
  options: { since: number; timeoutMs: number; notOnPort?: number; intervalMs?: number },
): Promise<WritableOutcome> => {
  const failures: Record<string, number> = {};
  const interval = options.intervalMs ?? 100;
  while (Date.now() - options.since < options.timeoutMs) {
    const started = Date.now();
    const outcome = await probeWrite(url);
    if (outcome.ok && outcome.port !== options.notOnPort) {
      return { ok: true, ms: Date.now() - options.since, port: outcome.port, failures };
    }
    const failure = outcome.ok ? `write still on the old primary (port ${outcome.port})` : outcome.failure;
    failures[failure] = (failures[failure] ?? 0) + 1;
    await sleep(interval - (Date.now() - started));
  }
  return { ok: false, ms: Date.now() - options.since, failures };
};
