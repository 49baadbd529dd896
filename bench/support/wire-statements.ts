import { Client } from 'pg';

/** One statement as the `pg` driver was asked to send it. */
export interface WireStatement {
  text: string;
  values: readonly unknown[];
  /** Set for a named prepared statement. */
  name?: string;
  /** The database the sending client is connected to. */
  database?: string;
}

type StatementListener = (statement: WireStatement) => void;
type QueryMethod = (this: Client, ...args: unknown[]) => unknown;

const listeners = new Set<StatementListener>();
const clientPrototype = Client.prototype as unknown as { query: QueryMethod };
let originalQuery: QueryMethod | undefined;

const asStatement = (args: readonly unknown[]): WireStatement => {
  const [first, second] = args;
  if (typeof first === 'string') return { text: first, values: Array.isArray(second) ? second : [] };
  const config = (first ?? {}) as { text?: unknown; values?: unknown; name?: unknown };
  const values = Array.isArray(config.values) ? config.values : Array.isArray(second) ? second : [];
  return {
    text: typeof config.text === 'string' ? config.text : '',
    values,
    ...(typeof config.name === 'string' ? { name: config.name } : {}),
  };
};

const install = (): void => {
  if (originalQuery) return;
  const original = clientPrototype.query;
  originalQuery = original;
  clientPrototype.query = function tappedQuery(this: Client, ...args: unknown[]): unknown {
    if (listeners.size > 0) {
      const statement = { ...asStatement(args), database: this.database };
      for (const listener of listeners) listener(statement);
    }
    return original.apply(this, args);
  };
};

const uninstallWhenIdle = (): void => {
  if (listeners.size > 0 || !originalQuery) return;
  clientPrototype.query = originalQuery;
  originalQuery = undefined;
};

/**
 * Observes every statement any `pg` client of this process sends (TypeORM's pool included), at the
 * driver: the count is what goes over the wire, whatever layer asked for it. Call the returned
 * function to stop observing.
 */
export const onWireStatement = (listener: StatementListener): (() => void) => {
  install();
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
    uninstallWhenIdle();
  };
};

/** Counts the statements sent while `body` runs (measurements run one at a time). */
export const countWireStatements = async <T>(body: () => Promise<T>): Promise<{ result: T; statements: number }> => {
  let statements = 0;
  const stop = onWireStatement(() => {
    statements++;
  });
  try {
    return { result: await body(), statements };
  } finally {
    stop();
  }
};
