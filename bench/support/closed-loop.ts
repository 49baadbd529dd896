export interface ClosedLoopResult {
  operations: number;
  elapsedMs: number;
  /** CPU time (user + system) of this Node process while the loop ran. */
  cpuMicros: number;
  latenciesMs: number[];
}

/**
 * `callers` concurrent callers, each running `operation` back to back until `durationMs` has
 * passed (a closed loop: a caller sends its next operation when the previous one returns).
 */
export const runClosedLoop = async (callers: number, durationMs: number, operation: (caller: number) => Promise<void>): Promise<ClosedLoopResult> => {
  const latenciesMs: number[] = [];
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: callers }, async (_, caller) => {
      while (performance.now() < deadline) {
        const sent = performance.now();
        await operation(caller);
        latenciesMs.push(performance.now() - sent);
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  return { operations: latenciesMs.length, elapsedMs, cpuMicros: cpu.user + cpu.system, latenciesMs };
};

/** One result of several slices of the same loop, as if it had run in one piece. */
export const mergeClosedLoops = (parts: readonly ClosedLoopResult[]): ClosedLoopResult => ({
  operations: parts.reduce((sum, part) => sum + part.operations, 0),
  elapsedMs: parts.reduce((sum, part) => sum + part.elapsedMs, 0),
  cpuMicros: parts.reduce((sum, part) => sum + part.cpuMicros, 0),
  latenciesMs: parts.flatMap((part) => part.latenciesMs),
});

export const perSecond = (result: ClosedLoopResult): number => result.operations / (result.elapsedMs / 1000);
