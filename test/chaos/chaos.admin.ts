import { Client } from 'pg';

/**
 * The orchestrator's own statements (watching, injecting faults, collecting evidence): each on a
 * short-lived connection, so a restart of the server never leaves it holding a dead one.
 */
export const adminQuery = async <Row = Record<string, unknown>>(url: string, text: string, values: unknown[] = []): Promise<Row[]> => {
  const client = new Client({ connectionString: url, application_name: 'chaos-orchestrator', connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(text, values)).rows as Row[];
  } finally {
    await client.end().catch(() => undefined);
  }
};

/** adminQuery, or undefined while the server cannot answer (it is restarting). */
export const tryAdminQuery = async <Row = Record<string, unknown>>(url: string, text: string, values: unknown[] = []): Promise<Row[] | undefined> => {
  try {
    return await adminQuery<Row>(url, text, values);
  } catch {
    return undefined;
  }
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
