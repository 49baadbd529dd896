import { Logger, type LoggerService } from '@nestjs/common';

export interface CapturedLog {
  level: 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
  message: string;
}

/**
 * Routes Nest's static Logger (what the library's services write to) into a list for the length
 * of `run`, so that a test asserts the lines it expects instead of printing them. Restored after.
 */
export const captureNestLogs = async <T>(run: (lines: CapturedLog[]) => Promise<T>): Promise<T> => {
  const lines: CapturedLog[] = [];
  const record =
    (level: CapturedLog['level']) =>
    (message: unknown): void =>
      void lines.push({ level, message: String(message) });
  const capture: LoggerService = {
    log: record('log'),
    error: record('error'),
    warn: record('warn'),
    debug: record('debug'),
    verbose: record('verbose'),
    fatal: record('fatal'),
  };
  Logger.overrideLogger(capture);
  try {
    return await run(lines);
  } finally {
    Logger.overrideLogger(false);
  }
};
