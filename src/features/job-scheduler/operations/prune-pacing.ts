/**
 * How `prune` paces its batches so that retention stays beside the hot path: after each full
 * batch it rests in proportion to how long that batch took (a duty cycle). A batch that a busy
 * database slows down is followed by a longer rest, so pruning backs off exactly when the
 * acquires beside it need the machine. Every batch is `batchSize`: a pass that finds fewer rows
 * deletes them in one statement. Until 2026-12-05 a paced pass started at 100 rows and doubled
 * each full batch; in the six bench runs of retention-churn that measured it against back to back
 * batches of 1,000, those gave an acquire p99 beside them as low or lower in 17 of 24 cases (more,
 * shorter statements spread their cost over more acquires: docs/performance.md). Pure, except
 * `restFor`.
 */

/** The default share of a pass spent in prune statements: each batch is followed by a rest as long as itself. */
export const DEFAULT_PRUNE_DUTY_CYCLE = 0.5;

/** The smallest duty cycle accepted: rests of 99 times the batch. */
export const MIN_PRUNE_DUTY_CYCLE = 0.01;

/** `dutyCycle` as given (the default when undefined), or null when it is not a number from 0.01 to 1. */
export const pruneDutyCycleOf = (value: unknown): number | null => {
  if (value === undefined) return DEFAULT_PRUNE_DUTY_CYCLE;
  return typeof value === 'number' && Number.isFinite(value) && value >= MIN_PRUNE_DUTY_CYCLE && value <= 1 ? value : null;
};

/** What a bad `dutyCycle` is told it must be. */
export const PRUNE_DUTY_CYCLE_RULE = `a number from ${MIN_PRUNE_DUTY_CYCLE} to 1 (the share of a pass spent in prune statements)`;

/** The rest after a batch that took `batchMs`, so that statements take `dutyCycle` of the pass. */
export const pruneRestMs = (batchMs: number, dutyCycle: number): number => (dutyCycle >= 1 ? 0 : (Math.max(0, batchMs) * (1 - dutyCycle)) / dutyCycle);

/** Waits `ms` (nothing at all for 0). */
export const restFor = (ms: number): Promise<void> => (ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms)));
