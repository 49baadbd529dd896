import type { JobExecution } from '../scheduling.types';

/** What a run's execution reads its signal from (the run's LeaseHold). */
interface SignalSource {
  readonly signal: AbortSignal;
}

/**
 * The JobExecution a handler gets: the same own, enumerable fields in the same order as an object
 * literal, `signal` read from the hold when the handler asks (LeaseHold makes its AbortController
 * then). One shared getter on every instance: a literal with a getter of its own per run was a
 * dictionary-mode object (470 B more per running handler, at 33,000 handlers running together).
 */
export class RunExecution implements JobExecution {
  /** Without a prototype: defineProperty reads inherited fields too (a polluted Object.prototype would break every run). */
  static readonly #signal: PropertyDescriptor = Object.assign(Object.create(null) as PropertyDescriptor, {
    get(this: RunExecution): AbortSignal {
      return this.#source.signal;
    },
    enumerable: true,
    configurable: true,
  });

  declare readonly name: string;
  declare readonly scheduledAt: Date;
  declare readonly startedAt: Date;
  declare readonly signal: AbortSignal;
  declare readonly tenantId?: string;
  declare readonly idempotencyKey: string;
  declare readonly fencingToken: number;
  declare readonly correlationId: string;
  declare readonly trigger: JobExecution['trigger'];
  declare readonly schedule?: JobExecution['schedule'];
  readonly #source: SignalSource;

  constructor(fields: Omit<JobExecution, 'signal' | 'schedule'>, source: SignalSource, schedule: JobExecution['schedule']) {
    this.#source = source;
    const self = this as { -readonly [K in keyof JobExecution]: JobExecution[K] };
    self.name = fields.name;
    self.scheduledAt = fields.scheduledAt;
    self.startedAt = fields.startedAt;
    Object.defineProperty(this, 'signal', RunExecution.#signal);
    self.tenantId = fields.tenantId;
    self.idempotencyKey = fields.idempotencyKey;
    self.fencingToken = fields.fencingToken;
    self.correlationId = fields.correlationId;
    self.trigger = fields.trigger;
    if (schedule) self.schedule = schedule;
  }
}
