import type { InstantTimers } from '../../job-scheduler/system-timers';

interface Bucket {
  entries: Set<{ fn: () => void }>;
  cancel: () => void;
}

/**
 * `at` over `timers` where the calls for one instant share one underlying timer: the scheduler
 * arms one timer per due instant instead of one per job (10,000 schedules due at one instant are
 * one timer, fired once, calling each in the order armed). Cancelling the last call of an instant
 * cancels its timer. If a call throws, the others still run and the first error is thrown after.
 */
export const coalescedTimers = (timers: InstantTimers): InstantTimers['at'] => {
  const buckets = new Map<number, Bucket>();
  return (instant, fn) => {
    const entry = { fn };
    let bucket = buckets.get(instant);
    if (bucket) {
      bucket.entries.add(entry);
    } else {
      const created: Bucket = { entries: new Set([entry]), cancel: () => undefined };
      bucket = created;
      buckets.set(instant, created);
      created.cancel = timers.at(instant, () => {
        if (buckets.get(instant) === created) buckets.delete(instant);
        let failure: { error: unknown } | undefined;
        for (const due of created.entries) {
          try {
            due.fn();
          } catch (error) {
            failure ??= { error };
          }
        }
        created.entries.clear();
        if (failure) throw failure.error;
      });
    }
    const armed = bucket;
    return () => {
      if (!armed.entries.delete(entry) || armed.entries.size > 0) return;
      if (buckets.get(instant) === armed) buckets.delete(instant);
      armed.cancel();
    };
  };
};
