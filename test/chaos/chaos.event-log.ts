import { appendJsonLine, readJsonLines, realNow } from '../support/fleet';
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
    appendJsonLine(this.file, { ...event, at: realNow() });
  }
}

/** Reads an event log back; a last line cut short by a kill is skipped. */
export const readEventLog = (file: string): LoggedEvent[] => readJsonLines<LoggedEvent>(file);
