import type { SchedulerHistory, SchedulerLogger, SchedulerTimers } from '../scheduler-ports';

/**
 * The instants among `instants` (ascending) that no instance recorded, by one read of the
 * history: an instance that stalled (a blocked event loop, a paused VM) while others ran the job
 * must not report their occurrences as missed. Without a history that can tell, all of them.
 */
export const unrecordedInstants = async (
  history: SchedulerHistory | undefined,
  name: string,
  instants: number[],
  timers: SchedulerTimers,
  logger: SchedulerLogger,
): Promise<number[]> => {
  if (instants.length === 0 || !history?.recordedOccurrences) return instants;
  try {
    const read = history.recordedOccurrences(name, instants[0], instants[instants.length - 1] + 1);
    timers.observe?.(read);
    const recorded = new Set(await read);
    return instants.filter((instant) => !recorded.has(instant));
  } catch (error) {
    logger.warn(`Could not read which occurrences of ${name} other instances ran; reporting them all as missed: ${String(error)}`);
    return instants;
  }
};
