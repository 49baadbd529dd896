import { appendFileSync } from 'node:fs';
import { readJsonLines } from '../support/json-lines';
import type { FailoverEvent, LoggedEvent } from './failover.protocol';

/**
 * A node's events, one JSON line each, appended synchronously (a node killed at teardown loses
 * at most the line being written), stamped with the wall clock every process shares.
 */
export class FailoverEventLog {
  constructor(private readonly file: string) {}

  write(event: FailoverEvent): void {
    appendFileSync(this.file, `${JSON.stringify({ ...event, at: Date.now() })}\n`);
  }
}

/** Reads an event log back; a last line cut short by a kill is skipped. */
export const readFailoverEvents = (file: string): LoggedEvent[] => readJsonLines<LoggedEvent>(file);
