import type { FleetMember } from './fleet-process';

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

export interface WaitOptions {
  /** What is waited for, as the errors say it: `<what>: not within <timeoutMs> ms`. */
  what: string;
  timeoutMs: number;
  /** How often the condition is tried again. */
  intervalMs: number;
  /** Processes that must stay up meanwhile: one that exits ends the wait at once, with its output. */
  watch?: Iterable<FleetMember>;
  /** Appended to the timeout error (e.g. the output of every process). */
  details?: () => string;
}

/** Tries `condition` until it holds; throws when a watched process exits first or the time is up. */
export const waitUntil = async (condition: () => boolean | Promise<boolean>, options: WaitOptions): Promise<void> => {
  const deadline = Date.now() + options.timeoutMs;
  while (!(await condition())) {
    for (const watched of options.watch ?? []) {
      if (!watched.alive) throw new Error(`${watched.name} exited while waiting for ${options.what}:\n${watched.outputTail()}`);
    }
    if (Date.now() > deadline) {
      throw new Error(`${options.what}: not within ${options.timeoutMs} ms${options.details ? `:\n${options.details()}` : ''}`);
    }
    await sleep(options.intervalMs);
  }
};

/** Waits until every one of `processes` has said it is ready; one that exits meanwhile fails the wait. */
export const untilReady = (processes: readonly FleetMember[], timeoutMs: number, intervalMs = 50): Promise<void> =>
  waitUntil(() => processes.every((member) => member.ready), {
    what: `${processes.length === 1 ? processes[0].name : `${processes.length} processes`} ready`,
    timeoutMs,
    intervalMs,
    watch: processes,
  });
