import { appendFileSync, existsSync, readFileSync } from 'node:fs';
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

/** Reads an event log back; a last line cut short by a SIGKILL is skipped. */
export const readEventLog = (file: string): LoggedEvent[] => {
  if (!existsSync(file)) return [];
  const events: LoggedEvent[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      events.push(JSON.parse(line) as LoggedEvent);
    } catch {
      // the line being written when the process was killed
    }
  }
  return events;
};
