import { describeDifference } from '../../job-scheduler/module-registrations';
/**
 * Why a @RunOnce method cannot run: a declaration checked when the file loads, or a wiring
 * checked at boot (`NOT_A_CRON`, `NOT_ALIGNED`, ...). Every message names the method.
 */
export type RunOnceErrorCode =
  | 'INVALID_DECLARATION'
  | 'NOT_A_CRON'
  | 'NOT_ALIGNED'
  | 'INVALID_CRON'
  | 'NO_DEFAULT_NAME'
  | 'DUPLICATE_NAME'
  | 'NO_LEASE'
  | 'NO_SCHEDULE_MODULE'
  | 'CRON_UNAVAILABLE'
  | 'DUPLICATE_MODULE'
  | 'NOT_REGISTERED';

export class RunOnceError extends Error {
  constructor(
    readonly code: RunOnceErrorCode,
    message: string,
    /** `ClassName.methodName`, when the error is about one method. */
    readonly method?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RunOnceError';
  }
}

const POINTER_TO_SCHEDULED =
  "Declare it with @Scheduled('<context>.<job-name>', { every: ... }) from @sdcorejs/nestjs/features instead: its intervals are aligned on the Unix epoch, so every instance names the same occurrences";

export const runOnceErrors = {
  invalidDeclaration: (method: string, reason: string, cause?: unknown) =>
    new RunOnceError('INVALID_DECLARATION', `@RunOnce on ${method}: ${reason}`, method, { cause }),
  notACron: (method: string) =>
    new RunOnceError(
      'NOT_A_CRON',
      `@RunOnce on ${method}: the method is not a @Cron method of @nestjs/schedule. @RunOnce names each tick by the instant its cron expression made it due; put @Cron(...) on the method too`,
      method,
    ),
  notAligned: (method: string, decorator: '@Interval' | '@Timeout') =>
    new RunOnceError(
      'NOT_ALIGNED',
      `@RunOnce on ${method}: ${decorator} is not supported. ${
        decorator === '@Interval'
          ? '@Interval counts from the start of each process, so the instances tick at different instants and no tick can be matched across them'
          : '@Timeout fires once per process, at an instant relative to its own start, which no other instance shares'
      }. ${POINTER_TO_SCHEDULED}, or use @Cron`,
      method,
    ),
  invalidCron: (method: string, cause: unknown) =>
    new RunOnceError(
      'INVALID_CRON',
      `@RunOnce on ${method}: @nestjs/schedule cannot read its @Cron: ${cause instanceof Error ? cause.message : String(cause)}`,
      method,
      { cause },
    ),
  noDefaultName: (method: string, derived: string) =>
    new RunOnceError(
      'NO_DEFAULT_NAME',
      `@RunOnce on ${method}: the default name "${derived}" is not <context>.<job-name> (two lowercase kebab-case segments, at most 64 characters); give one: @RunOnce('<context>.<job-name>')`,
      method,
    ),
  duplicateName: (name: string, first: string, second: string) =>
    new RunOnceError(
      'DUPLICATE_NAME',
      `@RunOnce name "${name}" is used by ${first} and by ${second}: two methods would share one lease per tick; give one of them another name`,
      second,
    ),
  nameOfScheduledJob: (name: string, method: string) =>
    new RunOnceError(
      'DUPLICATE_NAME',
      `@RunOnce on ${method}: "${name}" is also the name of a @Scheduled job; both would take the same leases. Give @RunOnce another name`,
      method,
    ),
  noLease: () =>
    new RunOnceError('NO_LEASE', 'RunOnceModule needs JobSchedulerService: import JobSchedulerModule.forRoot() (global, the default) in the application'),
  noScheduleModule: (count: number) =>
    new RunOnceError(
      'NO_SCHEDULE_MODULE',
      `${count} @RunOnce method(s) found, but the application does not import ScheduleModule.forRoot() from @nestjs/schedule, so no @Cron would ever fire: add ScheduleModule.forRoot() to the root module's imports, next to RunOnceModule.forRoot()`,
    ),
  cronUnavailable: (cause: unknown) =>
    new RunOnceError(
      'CRON_UNAVAILABLE',
      'RunOnceModule could not load the "cron" package that @nestjs/schedule schedules with; install @nestjs/schedule (4 or later) next to @sdcorejs/nestjs',
      undefined,
      { cause },
    ),
  notRegistered: (method: string) =>
    new RunOnceError(
      'NOT_REGISTERED',
      `@RunOnce on ${method}: not registered, so it did not run (it never runs without its lease). Import RunOnceModule.forRoot() in the application's root module`,
      method,
    ),
  duplicateModule: (count: number, differingKeys: readonly string[]) =>
    new RunOnceError(
      'DUPLICATE_MODULE',
      `RunOnceModule is imported ${count} times with different options (${describeDifference(differingKeys)}): import RunOnceModule.forRoot(…) once, in the root module, or give every import the same options`,
    ),
  invalidModuleOption: (field: string, rule: string, value: unknown) =>
    new RunOnceError('INVALID_DECLARATION', `RunOnceModule option ${field} must be ${rule}, got ${typeof value === 'string' ? `"${value}"` : String(value)}`),
};
