import { appendFileSync, existsSync, readFileSync } from 'node:fs';

/**
 * The JSON-lines reporting of every fleet: one JSON object a line. Processes append their event
 * logs and journals synchronously (a SIGKILL loses at most the line being written); the
 * orchestrators read them back; children without an IPC channel print them on stdout.
 */

/** Appends one line synchronously: once it returns, the line is in the kernel's hands. */
export const appendJsonLine = (file: string, value: unknown): void => {
  appendFileSync(file, `${JSON.stringify(value)}\n`);
};

/** Prints one line on stdout (the report of a child run by the integration tests). */
export const printJsonLine = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value)}\n`);
};

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

/**
 * Collects a stream of text chunks; with `parse`, also splits it into lines and keeps the JSON
 * ones (those that start with `{`: a child that reports in JSON lines prints each on one line),
 * beside the plain text (log lines) that comes interleaved with them.
 */
export class JsonLineCollector<T = Record<string, unknown>> {
  /** Everything received, as it came. */
  text = '';
  readonly lines: T[] = [];
  private pending = '';

  constructor(private readonly parse = true) {}

  take(chunk: Buffer | string): void {
    const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    this.text += text;
    if (!this.parse) return;
    this.pending += text;
    const parts = this.pending.split('\n');
    this.pending = parts.pop() ?? '';
    for (const part of parts) if (part.startsWith('{')) this.lines.push(JSON.parse(part) as T);
  }
}
