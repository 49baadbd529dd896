/**
 * How `prune` paces its batches so that retention stays beside the hot path: after each full
 * batch it rests in proportion to how long that batch took (a duty cycle). A batch that a busy
 * database slows down is followed by a longer rest, so pruning backs off exactly when the
 * acquires beside it need the machine. A paced pass also starts with a small batch and doubles it
 * after each full one, up to `batchSize`: a pass that finds a few hundred rows deletes them in
 * short statements with rests between, and a backlog reaches full batches after four smaller
 * statements, so a long pass keeps its capacity. Pure, except `restFor`.
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

/** A paced pass's first batch (or `batchSize`, if smaller). */
export const FIRST_PACED_PRUNE_BATCH = 100;

/** The first batch of a pass: small when paced, `batchSize` when not (dutyCycle 1: back to back, as before pacing). */
export const firstPruneBatch = (batchSize: number, dutyCycle: number): number => (dutyCycle >= 1 ? batchSize : Math.min(FIRST_PACED_PRUNE_BATCH, batchSize));

/** The batch after a full one of `size`: twice as large, at most `batchSize`. */
export const nextPruneBatch = (size: number, batchSize: number): number => Math.min(batchSize, 2 * size);
