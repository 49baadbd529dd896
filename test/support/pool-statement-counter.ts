import type { Pool, PoolClient } from 'pg';

/**
 * Counts what a `pg` pool's connections are asked to send, at the driver: every client the pool
 * hands out from now on has its `query` observed (then called as it was: the statement runs).
 * Records the text of each statement; `stop` leaves later checkouts alone.
 */
export class PoolStatementCounter {
  readonly statements: string[] = [];
  private readonly observed = new WeakSet<PoolClient>();
  private counting = true;

  constructor(pool: Pool) {
    pool.on('acquire', (client) => {
      if (this.observed.has(client)) return;
      this.observed.add(client);
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        if (this.counting) {
          const [first] = args;
          this.statements.push(typeof first === 'string' ? first : String((first as { text?: unknown } | null)?.text ?? ''));
        }
        return query(...args);
      };
    });
  }

  /** The statements whose text contains `fragment`. */
  matching(fragment: string): string[] {
    return this.statements.filter((text) => text.includes(fragment));
  }

  reset(): void {
    this.statements.length = 0;
  }

  stop(): void {
    this.counting = false;
  }
}
