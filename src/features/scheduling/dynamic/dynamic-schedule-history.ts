import type { JobSchedulerService } from '../../job-scheduler/job-scheduler.service';
import { keysUntil, occurrenceOfRunKey, scheduleRunKeyPrefix } from '../occurrence/occurrence-keys';
import type { SchedulerHistory } from '../scheduler-ports';

/** Schedules whose history one statement reads, at most. */
const PER_STATEMENT = 10_000;

/**
 * The history of dynamic schedules in the lease table, keyed by schedule id: each schedule's
 * occurrences are one range of IDX_job_scheduler_code_run_key (its handler's code, its id's
 * prefix), so the latest occurrence of 10,000 schedules is one statement of 10,000 index probes.
 */
export const dynamicScheduleHistory = (
  jobs: Pick<JobSchedulerService, 'latestRunKeysByPrefix' | 'scheduledRunKeysBetween'>,
  handlerOf: (scheduleId: string) => string | undefined,
): SchedulerHistory => {
  const latestOccurrences = async (ids: readonly string[], until?: number): Promise<ReadonlyMap<string, number>> => {
    const found = new Map<string, number>();
    const ranges = ids.flatMap((id) => {
      const code = handlerOf(id);
      return code === undefined ? [] : [{ code, prefix: scheduleRunKeyPrefix(id) }];
    });
    for (let start = 0; start < ranges.length; start += PER_STATEMENT) {
      for (const { runKey } of await jobs.latestRunKeysByPrefix(ranges.slice(start, start + PER_STATEMENT), keysUntil(until))) {
        const occurrence = occurrenceOfRunKey(runKey);
        if (occurrence?.scheduleId !== undefined) found.set(occurrence.scheduleId, occurrence.scheduledAt);
      }
    }
    return found;
  };
  return {
    latestOccurrence: async (id, until) => (await latestOccurrences([id], until)).get(id) ?? null,
    latestOccurrences,
    recordedOccurrences: async (id, from, until) => {
      const code = handlerOf(id);
      if (code === undefined) return [];
      const prefix = scheduleRunKeyPrefix(id);
      const runKeys = await jobs.scheduledRunKeysBetween(code, `${prefix}${new Date(from).toISOString()}`, `${prefix}${new Date(until).toISOString()}`);
      return runKeys.map((runKey) => occurrenceOfRunKey(runKey)?.scheduledAt).filter((instant): instant is number => instant !== undefined);
    },
  };
};
