import { appendJsonLine, readJsonLines } from '../support/fleet';
import type { FailoverEvent, LoggedEvent } from './failover.protocol';

/**
 * A node's events, one JSON line each, appended synchronously (a node killed at teardown loses
 * at most the line being written), stamped with the wall clock every process shares.
 */
export class FailoverEventLog {
  constructor(private readonly file: string) {}

  write(event: FailoverEvent): void {
    appendJsonLine(this.file, { ...event, at: Date.now() });
  }
}

/** Reads an event log back; a last line cut short by a kill is skipped. */
export const readFailoverEvents = (file: string): LoggedEvent[] => readJsonLines<LoggedEvent>(file);
