import { Logger } from '@nestjs/common';

/** C0 controls and DEL, plus the Unicode line and paragraph separators: what could end a log line or forge another. */
// eslint-disable-next-line no-control-regex
const LINE_BREAKING = /[\u0000-\u001f\u007f\u2028\u2029]/g;

const ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * The text of a log line with its control characters escaped (`\n`, `\r`, `\t`, else `\uXXXX`):
 * ids that reach a message (job names, tenant ids, schedule ids, run keys, a driver's message)
 * can never break a line or forge another. The one place log text is escaped.
 */
export const escapeLogText = (text: string): string =>
  text.replace(LINE_BREAKING, (char) => ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);

const escaped = (message: unknown): unknown => (typeof message === 'string' ? escapeLogText(message) : message);

/**
 * Nest's Logger for this library's own lines: the message is escaped (escapeLogText). A stack
 * given to error() stays as it is (multi-line by nature, and written apart from the message).
 */
export class LibraryLogger extends Logger {
  override log(message: unknown, ...rest: unknown[]): void {
    super.log(escaped(message), ...rest);
  }

  override warn(message: unknown, ...rest: unknown[]): void {
    super.warn(escaped(message), ...rest);
  }

  override error(message: unknown, ...rest: unknown[]): void {
    super.error(escaped(message), ...rest);
  }

  override debug(message: unknown, ...rest: unknown[]): void {
    super.debug(escaped(message), ...rest);
  }

  override verbose(message: unknown, ...rest: unknown[]): void {
    super.verbose(escaped(message), ...rest);
  }

  override fatal(message: unknown, ...rest: unknown[]): void {
    super.fatal(escaped(message), ...rest);
  }
}
