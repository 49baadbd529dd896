import { createHash } from 'node:crypto';

const names = new Map<string, string>();

/**
 * A stable name for a statement text, for `pg` named prepared statements: the same text always
 * gets the same name, so each connection prepares it once and then only binds and executes.
 */
export const preparedStatementName = (text: string): string => {
  let name = names.get(text);
  if (name === undefined) {
    name = `bench_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
};
