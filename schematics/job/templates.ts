// The files the job schematic writes, as functions of its names (valid TypeScript, type-checked here).

export interface JobNames {
  /** `notifications.send-reminders` */
  name: string;
  /** `notifications` */
  context: string;
  /** `send-reminders` */
  job: string;
  /** `NotificationsModule` */
  moduleClass: string;
  /** `SendRemindersJob` */
  jobClass: string;
  /** `SendReminders`: the use case the job triggers (a port) */
  useCase: string;
  /** `SendRemindersCommand`: what the job sends it */
  command: string;
  /** `SEND_REMINDERS`: the injection token of the use case */
  token: string;
  /** `SendRemindersService`: the placeholder implementation, to replace */
  placeholder: string;
  /** `sendReminders`: the job's field */
  field: string;
  /** `JOB_NOTIFICATIONS_SEND_REMINDERS_ENABLED` */
  switchVariable: string;
  /** `src/job-settings.ts`, for comments */
  settingsFile: string;
}

/** `{ cron: '0 7 * * *', timeZone: 'Europe/Paris' }` or `{ every: '15m' }`, as written in the decorator. */
export interface ScheduleText {
  /** The TypeScript object literal. */
  literal: string;
  /** The properties, for the spec's register({ name, ...schedule, run }). */
  properties: string[];
  /** A first due instant, and how long before it the spec's clock starts. */
  due: Date;
  leadMs: number;
  /** The instant the spec's first occurrence is the first one after. */
  reference: number;
  /** `"0 7 * * *" in Europe/Paris` or `every 15m`, for comments. */
  description: string;
}

/** 30000 → 30_000 */
const readableMs = (ms: number): string => String(ms).replace(/\B(?=(\d{3})+$)/g, '_');

export const jobFile = (n: JobNames, schedule: ScheduleText): string => `import { Inject } from '@nestjs/common';
import { Scheduled, type JobExecution, type ScheduledJob } from '@sdcorejs/nestjs/features';
import { ${n.token}, type ${n.useCase} } from './${n.job}.use-case';

/**
 * Triggers ${n.useCase} ${schedule.description}.
 *
 * The rule lives in the use case, never here. An occurrence runs once across instances, best
 * effort (it may run twice or not at all): the use case is idempotent and works on the period of
 * execution.scheduledAt, never on the clock.
 * Switched off with ${n.switchVariable}=false (${n.settingsFile}).
 */
@Scheduled('${n.name}', ${schedule.literal})
export class ${n.jobClass} implements ScheduledJob {
  constructor(@Inject(${n.token}) private readonly ${n.field}: ${n.useCase}) {}

  async run(execution: JobExecution): Promise<void> {
    await this.${n.field}.execute(
      { asOf: execution.scheduledAt, idempotencyKey: execution.idempotencyKey },
      execution.signal,
    );
  }
}
`;

export const useCaseFile = (n: JobNames): string => `/** What the job ${n.name} sends at each occurrence. */
export interface ${n.command} {
  /** The instant the occurrence was due: the period to work on. */
  readonly asOf: Date;
  /** Stable for the occurrence across instances: key side effects on it. */
  readonly idempotencyKey: string;
}

/** The use case the job ${n.name} triggers, bound to ${n.token} in ${n.moduleClass}. */
export interface ${n.useCase} {
  /** Idempotent: the same occurrence sent twice leaves the state it leaves once. Stops when signal aborts. */
  execute(command: ${n.command}, signal: AbortSignal): Promise<void>;
}

export const ${n.token} = Symbol('${n.useCase}');
`;

export const placeholderFile = (n: JobNames): string => `import { Injectable, Logger } from '@nestjs/common';
import type { ${n.command}, ${n.useCase} } from './jobs/${n.job}.use-case';

/**
 * Stands in for the use case the job ${n.name} triggers, so that the application boots.
 * Bind ${n.token} to your use case (or to your command bus) in ${n.moduleClass}, then delete
 * this class.
 */
@Injectable()
export class ${n.placeholder} implements ${n.useCase} {
  private readonly logger = new Logger(${n.placeholder}.name);

  async execute(command: ${n.command}): Promise<void> {
    this.logger.log(\`${n.name} as of \${command.asOf.toISOString()}\`);
  }
}
`;

export const specFile = (n: JobNames, schedule: ScheduleText): string => {
  const start = new Date(schedule.due.getTime() - schedule.leadMs);
  return `import { FixedClock, InMemoryJobLease, ManualJobScheduler } from '@sdcorejs/nestjs/features/testing';
import type { ${n.command}, ${n.useCase} } from './${n.job}.use-case';
import { ${n.jobClass} } from './${n.job}.job';

describe('${n.jobClass}', () => {
  it('sends ${n.useCase} once per occurrence, with the due instant, when two instances run it', async () => {
    const sent: ${n.command}[] = [];
    const ${n.field}: ${n.useCase} = {
      execute: async (command) => {
        sent.push(command);
      },
    };
    // Two instances: two schedulers on the same clock and the same lease.
    // The first occurrence ${schedule.description} after ${new Date(schedule.reference).toISOString()}.
    const due = new Date('${schedule.due.toISOString()}');
    const clock = new FixedClock(new Date('${start.toISOString()}'));
    const lease = new InMemoryJobLease(clock);
    const instances = [1, 2].map(() => new ManualJobScheduler({ clock, lease }));
    for (const scheduler of instances) {
      const job = new ${n.jobClass}(${n.field});
      scheduler.register({
        name: '${n.name}',
${schedule.properties.map((property) => `        ${property},\n`).join('')}        run: (execution) => job.run(execution),
      });
      await scheduler.start();
    }
    const [first, second] = instances;

    await first.advance(${readableMs(schedule.leadMs)});
    await second.advance(0);

    expect(first.runs.map((run) => run.outcome)).toEqual(['succeeded']);
    expect(second.runs.map((run) => run.outcome)).toEqual(['skipped-locked']);
    expect(sent).toEqual([{ asOf: due, idempotencyKey: expect.any(String) }]);
    await Promise.all(instances.map((scheduler) => scheduler.stop()));
  });
});
`;
};

export const moduleFile = (n: JobNames): string => `import { Module } from '@nestjs/common';

@Module({
  providers: [],
})
export class ${n.moduleClass} {}
`;

export const settingsFile = (): string => `import type { JobSettings } from '@sdcorejs/nestjs/features';

/**
 * The settings of the scheduled jobs, keyed by job name, read from the environment where
 * SchedulingModule is wired. JOB_<CONTEXT>_<JOB>_ENABLED=false switches a job off: no timers,
 * runNow still runs it. A key no module declares fails at boot (UNKNOWN_JOB).
 */
export const jobSettings = (env: Record<string, string | undefined> = process.env): Record<string, JobSettings> => ({
});
`;
