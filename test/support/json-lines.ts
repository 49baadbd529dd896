import { existsSync, readFileSync } from 'node:fs';

/** Reads a file of JSON lines (an event log); a last line cut short by a kill is skipped. */
export const readJsonLines = <T>(file: string): T[] => {
  if (!existsSync(file)) return [];
  const values: T[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      values.push(JSON.parse(line) as T);
    } catch {
      // the line being written when the process was killed
    }
  }
  return values;
};
