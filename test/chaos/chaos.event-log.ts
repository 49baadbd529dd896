import { appendFileSync } from 'node:fs';
import { readJsonLines } from '../support/json-lines';
import type { WorkerEvent } from './chaos.protocol';

export type LoggedEvent = WorkerEvent & { at: number };

/**
 * A worker's events, one JSON line each, appended synchronously: when the process is SIGKILLed,
 * every line written before is already in the kernel's hands. Times are real (performance
 * clock), not the possibly skewed `Date`.
 */
export class ChaosEventLog {
  constructor(private readonly file: string) {}

  write(event: WorkerEvent): void {
    const at = Math.round(performance.timeOrigin + performance.now());
    appendFileSync(this.file, `${JSON.stringify({ ...event, at })}\n`);
  }
}

/** Reads an event log back; a last line cut short by a kill is skipped. */
export const readEventLog = (file: string): LoggedEvent[] => readJsonLines<LoggedEvent>(file);
