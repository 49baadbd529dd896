import type { ErrorSummary } from './failover.protocol';

/**
 * What an error says, everywhere it could say it: the chain below it, a short summary for the
 * event log, and every text a logger or a JSON serializer could print.
 */

/** The properties through which errors nest: `cause`, TypeORM's `driverError`, AggregateError's `errors`. */
const nestedErrors = (error: object): unknown[] => {
  const record = error as { cause?: unknown; driverError?: unknown; originalError?: unknown; errors?: unknown };
  const nested = [record.cause, record.driverError, record.originalError];
  if (Array.isArray(record.errors)) nested.push(...(record.errors as unknown[]));
  return nested.filter((value) => value !== undefined && value !== null);
};

/** The error and every error below it, nearest first, each once (cycles are cut). */
export const errorChain = (error: unknown, limit = 12): unknown[] => {
  const chain: unknown[] = [];
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0 && chain.length < limit) {
    const current = queue.shift();
    if (current === undefined || current === null || seen.has(current)) continue;
    seen.add(current);
    chain.push(current);
    if (typeof current === 'object') queue.push(...nestedErrors(current));
  }
  return chain;
};

const nameOf = (value: unknown): string => {
  if (value instanceof Error) return value.name;
  if (typeof value === 'object' && value !== null)
    return (value as { name?: unknown }).name === undefined ? 'object' : String((value as { name?: unknown }).name);
  return typeof value;
};

const codeOf = (value: unknown): string | undefined => {
  if (typeof value !== 'object' || value === null) return undefined;
  const code = (value as { code?: unknown }).code;
  return typeof code === 'string' || typeof code === 'number' ? String(code) : undefined;
};

const messageOf = (value: unknown): string => {
  if (value instanceof Error) return value.message;
  if (typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string') {
    return (value as { message: string }).message;
  }
  return String(value);
};

const short = (text: string): string => (text.length > 240 ? `${text.slice(0, 240)}…` : text);

/** Name, code and message of an error and of the chain below it (for the event log). */
export const summarizeError = (error: unknown): ErrorSummary => {
  const [top, ...below] = errorChain(error);
  const code = codeOf(top);
  const causes = below.map((cause) => {
    const causeCode = codeOf(cause);
    return { name: nameOf(cause), ...(causeCode === undefined ? {} : { code: causeCode }), message: short(messageOf(cause)) };
  });
  return {
    name: nameOf(top),
    ...(code === undefined ? {} : { code }),
    message: short(messageOf(top)),
    ...(causes.length > 0 ? { causes } : {}),
  };
};

/** The SQLSTATE-like code of an error: its own, or the nearest one in its chain. */
export const nearestCode = (summary: ErrorSummary): string | undefined => summary.code ?? summary.causes?.find((cause) => cause.code)?.code;

/** JSON of anything, as a logger would print it: cycles cut, bigints as strings, never throws. */
export const safeJson = (value: unknown): string => {
  const seen = new WeakSet<object>();
  try {
    return (
      JSON.stringify(value, (_key, nested: unknown) => {
        if (typeof nested === 'bigint') return nested.toString();
        if (typeof nested === 'object' && nested !== null) {
          if (seen.has(nested)) return '[circular]';
          seen.add(nested);
        }
        return nested;
      }) ?? ''
    );
  } catch (error) {
    return `[unserializable: ${String(error)}]`;
  }
};

export interface ErrorText {
  /** Where the text comes from: `message`, `stack`, `json`, `string`, `cause1.message`... */
  part: string;
  text: string;
}

/** Every text an error (and each error below it) shows: message, stack, String(), JSON. */
export const errorTexts = (error: unknown): ErrorText[] => {
  const texts: ErrorText[] = [];
  errorChain(error).forEach((item, depth) => {
    const prefix = depth === 0 ? '' : `cause${depth}.`;
    if (typeof item !== 'object' || item === null) {
      texts.push({ part: `${prefix}string`, text: String(item) });
      return;
    }
    texts.push({ part: `${prefix}message`, text: messageOf(item) });
    const stack = (item as { stack?: unknown }).stack;
    if (typeof stack === 'string') texts.push({ part: `${prefix}stack`, text: stack });
    let asString: string;
    try {
      asString = String(item);
    } catch {
      asString = '';
    }
    texts.push({ part: `${prefix}string`, text: asString });
    texts.push({ part: `${prefix}json`, text: safeJson(item) });
  });
  return texts;
};
