import { Injectable } from '@nestjs/common';
import { checkJobName } from '../schedule/job-declaration';

export const SCHEDULE_HANDLER_METADATA = Symbol('sdcorejs:schedule-handler');

/** The handler name @ScheduleHandler stored on a class, or undefined. The one reader of that metadata. */
export const scheduleHandlerOf = (target: unknown): string | undefined =>
  typeof target === 'function' ? (Reflect.getMetadata(SCHEDULE_HANDLER_METADATA, target) as string | undefined) : undefined;

/**
 * Declares an injectable provider as the handler of dynamic schedules named
 * `<context>.<handler-name>` (the lease code of their occurrences), which implements
 * `run(execution)`; `execution.schedule` holds the schedule's id, data and tenant. The name is
 * checked when the file loads (DeclarationError).
 *
 * @ScheduleHandler('reports.send-tenant-report')
 */
export const ScheduleHandler =
  (name: string): ClassDecorator =>
  (target) => {
    Reflect.defineMetadata(SCHEDULE_HANDLER_METADATA, checkJobName(name), target);
    Injectable()(target);
  };
