import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import {
  currentJobExecution,
  type DynamicScheduleExecution,
  type DynamicScheduleHandler,
  type JobExecution,
  RunOnce,
  Scheduled,
  type ScheduledJob,
  type ScheduledJobOptions,
  ScheduleHandler,
  type TenantDirectory,
} from '../../../src/features';
import { DECLARED_JOBS, DYNAMIC_HANDLER, TENANTS } from './scheduler-chaos.catalogue';
import { RunRecorder } from './scheduler-chaos.recorder';

/**
 * The jobs of every instance, declared through the public API with the library's default options
 * except each job's `leaseMs` (and one job's `jitterMs`, one job's `abandoned: 'drop'`), whose
 * values come from the catalogue the verdict reads. Every handler hands its execution to the
 * recorder, which writes it down and works for the planned time.
 */
const declared = (code: string): ScheduledJobOptions => {
  const job = DECLARED_JOBS.find((candidate) => candidate.code === code);
  if (!job) throw new Error(`${code} is not in the catalogue`);
  return {
    every: job.everyMs,
    leaseMs: job.leaseMs,
    ...(job.jitterMs > 0 ? { jitterMs: job.jitterMs } : {}),
    ...(job.abandoned === 'drop' ? { abandoned: 'drop' as const } : {}),
    ...(job.kind === 'tenant' ? { tenancy: 'per-tenant' as const } : {}),
  };
};

const runOnceLease = DECLARED_JOBS.find((job) => job.code === 'chaos.run-once-5s')?.leaseMs;

@Scheduled('chaos.every-5s', declared('chaos.every-5s'))
export class Every5sJob implements ScheduledJob {
  constructor(private readonly recorder: RunRecorder) {}
  run(execution: JobExecution): Promise<void> {
    return this.recorder.perform('scheduled', execution);
  }
}

@Scheduled('chaos.jitter-3s', declared('chaos.jitter-3s'))
export class Jitter3sJob implements ScheduledJob {
  constructor(private readonly recorder: RunRecorder) {}
  run(execution: JobExecution): Promise<void> {
    return this.recorder.perform('scheduled', execution);
  }
}

@Scheduled('chaos.drop-5s', declared('chaos.drop-5s'))
export class Drop5sJob implements ScheduledJob {
  constructor(private readonly recorder: RunRecorder) {}
  run(execution: JobExecution): Promise<void> {
    return this.recorder.perform('scheduled', execution);
  }
}

@Scheduled('chaos.tenants-10s', declared('chaos.tenants-10s'))
export class Tenants10sJob implements ScheduledJob {
  constructor(private readonly recorder: RunRecorder) {}
  run(execution: JobExecution): Promise<void> {
    return this.recorder.perform('tenant', execution);
  }
}

@Injectable()
export class ChaosTenants implements TenantDirectory {
  listTenants(): readonly string[] {
    return TENANTS;
  }
}

@Injectable()
export class RunOnceCron {
  constructor(private readonly recorder: RunRecorder) {}

  @Cron('*/5 * * * * *')
  @RunOnce('chaos.run-once-5s', { leaseMs: runOnceLease })
  async tick(): Promise<void> {
    const execution = currentJobExecution();
    if (!execution) throw new Error('@RunOnce ran the method without its execution');
    await this.recorder.perform('run-once', execution);
  }
}

@ScheduleHandler(DYNAMIC_HANDLER)
export class DynamicRunHandler implements DynamicScheduleHandler {
  constructor(private readonly recorder: RunRecorder) {}
  run(execution: DynamicScheduleExecution): Promise<void> {
    return this.recorder.perform('dynamic', execution);
  }
}

export const DECLARED_JOB_PROVIDERS = [Every5sJob, Jitter3sJob, Drop5sJob, Tenants10sJob, RunOnceCron];
