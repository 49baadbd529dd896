import { Logger } from '@nestjs/common';
import { type JobExecution, Scheduled, type ScheduledJob } from '@sdcorejs/nestjs/features';

// Every instance's timer fires every 5 s; each occurrence runs on exactly one instance.
@Scheduled('reports.heartbeat', { every: '5s' })
export class HeartbeatJob implements ScheduledJob {
  private readonly logger = new Logger(HeartbeatJob.name);

  async run(execution: JobExecution): Promise<void> {
    // scheduledAt is the instant the occurrence was due (the same on every instance), never "now".
    // Make real work idempotent with execution.idempotencyKey, and stop when execution.signal aborts.
    this.logger.log(`ran the occurrence due at ${execution.scheduledAt.toISOString()}`);
  }
}
