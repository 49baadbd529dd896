import { errorTexts } from './failover.error-text';
import type { LeakCounts } from './failover.protocol';

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * Owner tokens are a fencing capability: they must never reach an error message, a stack, a
 * cause chain, JSON or a log line. A node keeps the tokens it was given here, in memory only,
 * and passes through it every error it sees and everything it prints. UUIDs that are neither a
 * known token nor a known lease id are counted apart: an acquire that threw never told the node
 * its token, yet the error may carry it (and the row may have been written).
 */
export class TokenLeakDetector {
  private readonly tokens = new Set<string>();
  private readonly leaseIds = new Set<string>();
  private readonly byPlace = new Map<string, number>();
  private readonly unidentifiedByPlace = new Map<string, number>();

  addToken(token: string): void {
    this.tokens.add(token.toLowerCase());
  }

  addLeaseId(id: string): void {
    this.leaseIds.add(id.toLowerCase());
  }

  get ownerTokens(): string[] {
    return [...this.tokens];
  }

  /** Every text of an error (message, stack, JSON, the cause chain), as `place.part`. */
  scanError(place: string, error: unknown): void {
    for (const { part, text } of errorTexts(error)) this.scanText(`${place}.${part}`, text);
  }

  scanText(place: string, text: string): void {
    for (const match of text.matchAll(UUID)) {
      const value = match[0].toLowerCase();
      if (this.tokens.has(value)) increment(this.byPlace, place);
      else if (!this.leaseIds.has(value)) increment(this.unidentifiedByPlace, place);
    }
  }

  counts(): LeakCounts {
    const unidentified = Object.fromEntries(this.unidentifiedByPlace);
    return {
      byPlace: Object.fromEntries(this.byPlace),
      unidentifiedUuids: Object.values(unidentified).reduce((sum, count) => sum + count, 0),
      unidentifiedByPlace: unidentified,
    };
  }
}

const increment = (map: Map<string, number>, key: string): void => {
  map.set(key, (map.get(key) ?? 0) + 1);
};

/** How many times any of `tokens` occurs in `text` (the orchestrator's look through the files). */
export const countTokenOccurrences = (text: string, tokens: Iterable<string>): number => {
  const wanted = new Set([...tokens].map((token) => token.toLowerCase()));
  if (wanted.size === 0) return 0;
  let count = 0;
  for (const match of text.matchAll(UUID)) if (wanted.has(match[0].toLowerCase())) count++;
  return count;
};

export interface TokenLeakFigures {
  /** Known owner tokens found by the nodes in errors and printed output, by place. */
  byPlace: Record<string, number>;
  /** Known owner tokens found by the orchestrator in the files the run wrote (events, logs). */
  inFiles: number;
  total: number;
  /** UUID-shaped values in errors the nodes could not place (an acquire that threw carries a token it never returned). */
  unidentifiedUuids: number;
  unidentifiedByPlace: Record<string, number>;
}

const addInto = (target: Record<string, number>, source: Record<string, number>): void => {
  for (const [place, count] of Object.entries(source)) target[place] = (target[place] ?? 0) + count;
};

/** Every node's counts added up, with what the orchestrator found in the files. */
export const mergeLeakCounts = (nodes: LeakCounts[], inFiles: number): TokenLeakFigures => {
  const byPlace: Record<string, number> = {};
  const unidentifiedByPlace: Record<string, number> = {};
  for (const counts of nodes) {
    addInto(byPlace, counts.byPlace);
    addInto(unidentifiedByPlace, counts.unidentifiedByPlace);
  }
  const sum = (record: Record<string, number>): number => Object.values(record).reduce((total, count) => total + count, 0);
  return { byPlace, inFiles, total: sum(byPlace) + inFiles, unidentifiedUuids: sum(unidentifiedByPlace), unidentifiedByPlace };
};
