import { JobOccupancy } from '../../../src/features/scheduling/occurrence/job-occupancy';

/**
 * The overlap policy right before a handler starts. An idle job is entered at once, without a
 * promise: thousands of occurrences due together each start without a wait of their own.
 */
it('enters an idle job at once, skips a busy one, and queues behind it with "queue"', async () => {
  const occupancy = new JobOccupancy();
  const first = occupancy.enter('skip');
  expect(typeof first).toBe('function');
  expect(occupancy.running).toBe(1);
  expect(occupancy.enter('skip')).toBeNull();
  expect(occupancy.running).toBe(1);

  const queued = occupancy.enter('queue');
  expect(queued).toBeInstanceOf(Promise);
  let entered = false;
  void (queued as Promise<() => void>).then(() => (entered = true));
  await Promise.resolve();
  expect(entered).toBe(false);
  (first as () => void)();
  const leave = await queued;
  expect(entered).toBe(true);
  expect(occupancy.running).toBe(1);
  (leave as () => void)();
  expect(occupancy.running).toBe(0);
});
