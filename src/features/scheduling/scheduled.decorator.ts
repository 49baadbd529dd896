import { Injectable } from '@nestjs/common';
import { checkJobDeclaration, type JobDeclaration } from './schedule/job-declaration';
import type { ScheduledJobOptions } from './scheduling.types';

export const SCHEDULED_JOB_METADATA = Symbol('sdcorejs:scheduled-job');

/** The declaration @Scheduled stored on a class, or undefined. The one reader of that metadata. */
export const scheduledJobOf = (target: unknown): JobDeclaration | undefined =>
  typeof target === 'function' ? (Reflect.getMetadata(SCHEDULED_JOB_METADATA, target) as JobDeclaration | undefined) : undefined;

/**
 * Declares an injectable provider as a scheduled job named `<context>.<job-name>`, which
 * implements `run(execution)`. The name and schedule are checked when the file loads: an
 * invalid one throws a DeclarationError naming the job.
 *
 * @Scheduled('notifications.send-reminders', { cron: '0 7 * * *', timeZone: 'Europe/Paris' })
 */
export const Scheduled =
  (name: string, options: ScheduledJobOptions): ClassDecorator =>
  (target) => {
    Reflect.defineMetadata(SCHEDULED_JOB_METADATA, checkJobDeclaration(name, options), target);
    Injectable()(target);
  };
