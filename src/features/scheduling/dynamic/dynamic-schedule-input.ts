import { UNSTORABLE_TEXT } from '../../job-scheduler/job-identity';
import { serializeJobData } from '../../job-scheduler/lease-arguments';
import { MAX_ENCODED_SCHEDULE_ID_LENGTH, scheduleRunKeyPrefix, tenantIdProblem } from '../occurrence/occurrence-keys';
import { IntervalSchedule } from '../schedule/due-schedule';
import { checkJobDeclaration, checkJobName, type JobDeclaration } from '../schedule/job-declaration';
import { DeclarationError } from '../scheduling.errors';
import type { ScheduledJobOptions } from '../scheduling.types';
import type { ScheduleRow, StoredScheduleRow } from './dynamic-schedule.sql';
import type { DynamicScheduleInput, DynamicScheduleView } from './dynamic-schedule.types';

const MAX_ID_LENGTH = 256;
/** A schedule's data, serialized, at most (it is read by every instance at boot). */
export const MAX_SCHEDULE_DATA_BYTES = 64 * 1024;
const FIELDS = new Set(['id', 'handler', 'cron', 'every', 'timeZone', 'data', 'tenantId', 'enabled', 'overlap', 'missed', 'timeoutMs', 'leaseMs']);

/** Why a schedule id cannot be stored, or null. */
const idProblem = (id: unknown): string | null => {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) return `the id must be a string of 1 to ${MAX_ID_LENGTH} characters`;
  if (UNSTORABLE_TEXT.test(id)) return 'the id contains a NUL character or a lone surrogate, which PostgreSQL text cannot store';
  if (scheduleRunKeyPrefix(id).length - 'schedule= '.length > MAX_ENCODED_SCHEDULE_ID_LENGTH) {
    return `the id, percent-encoded for its lease keys, takes more than ${MAX_ENCODED_SCHEDULE_ID_LENGTH} characters`;
  }
  return null;
};

/** The schedule's id, checked: 1–256 characters PostgreSQL can store. Throws DeclarationError. */
export const checkScheduleId = (id: unknown): string => {
  const problem = idProblem(id);
  if (problem) throw new DeclarationError(`schedule ${JSON.stringify(String(id)).slice(0, 80)}`, problem);
  return id as string;
};

/** The policies of a stored schedule, in the form a declaration takes. */
const declarationOptions = (row: ScheduleRow): ScheduledJobOptions => ({
  ...(row.cron === null ? { every: Number(row.everyMs) } : { cron: row.cron, ...(row.timeZone === null ? {} : { timeZone: row.timeZone }) }),
  overlap: row.overlap as ScheduledJobOptions['overlap'],
  missed: row.missed as ScheduledJobOptions['missed'],
  ...(row.timeoutMs === null ? {} : { timeoutMs: row.timeoutMs }),
  ...(row.leaseMs === null ? {} : { leaseMs: row.leaseMs }),
});

/**
 * Checked declarations by the fields they are made of (handler, schedule, policies), for the rows
 * of one read: 100,000 schedules at boot are mostly a few shapes, each checked and compiled once
 * (its compiled schedule shared: it holds no state of a run). Valid for one read only: whether a
 * cron still has an instant ahead depends on when it is checked.
 */
export type DeclarationMemo = Map<string, Omit<JobDeclaration, 'dynamicSchedule'>>;

const shapeOf = (row: ScheduleRow): string =>
  `${row.handler}\u0000${row.cron}\u0000${row.everyMs}\u0000${row.timeZone}\u0000${row.overlap}\u0000${row.missed}\u0000${row.timeoutMs}\u0000${row.leaseMs}`;

/** The declaration the scheduler runs a stored schedule by. Throws DeclarationError (a row no longer valid here). */
export const declarationOfSchedule = (row: ScheduleRow, memo?: DeclarationMemo): JobDeclaration => {
  const shape = memo && shapeOf(row);
  let checked = shape === undefined ? undefined : memo?.get(shape);
  if (checked === undefined) {
    checked = checkJobDeclaration(row.handler, declarationOptions(row));
    if (shape !== undefined) memo?.set(shape, checked);
  }
  return { ...checked, dynamicSchedule: { id: row.id, data: row.data ?? null, ...(row.tenantId === null ? {} : { tenantId: row.tenantId }) } };
};

/**
 * Checks an upsert as a declaration is checked (id, handler, schedule, time zone, policies, data,
 * tenant), before any SQL: the row to write and its declaration. `knownHandler` says whether this
 * application has a @ScheduleHandler of that name. Throws DeclarationError.
 */
export const checkScheduleInput = (input: DynamicScheduleInput, knownHandler: (name: string) => boolean): { row: ScheduleRow; declaration: JobDeclaration } => {
  if (typeof input !== 'object' || input === null) throw new DeclarationError('schedule', 'upsert takes { id, handler, cron | every, ... }');
  const id = checkScheduleId(input.id);
  const fail = (reason: string): never => {
    throw new DeclarationError(id, reason);
  };
  for (const field of Object.keys(input)) if (!FIELDS.has(field)) fail(`unknown field "${field}"`);
  try {
    checkJobName(input.handler);
  } catch {
    fail(`the handler must be a @ScheduleHandler name (<context>.<handler-name>), got ${String(input.handler)}`);
  }
  if (!knownHandler(input.handler)) fail(`no @ScheduleHandler('${input.handler}') in this application`);
  if (input.enabled !== undefined && typeof input.enabled !== 'boolean') fail(`enabled must be a boolean, got ${String(input.enabled)}`);
  if (input.tenantId !== undefined) {
    const problem = tenantIdProblem(input.tenantId);
    if (problem) fail(`tenantId: ${problem}`);
  }
  let dataText: string | null;
  try {
    dataText = serializeJobData(input.data);
  } catch (error) {
    return fail(`data: ${(error as Error).message}`);
  }
  if (dataText !== null && Buffer.byteLength(dataText) > MAX_SCHEDULE_DATA_BYTES) fail(`data takes more than ${MAX_SCHEDULE_DATA_BYTES} bytes as JSON`);
  // The schedule and policies, by the rules of a declaration (messages name the schedule's id).
  let declaration: JobDeclaration;
  try {
    declaration = checkJobDeclaration(input.handler, {
      ...(input.cron === undefined ? {} : { cron: input.cron }),
      ...(input.every === undefined ? {} : { every: input.every }),
      ...(input.timeZone === undefined ? {} : { timeZone: input.timeZone }),
      overlap: input.overlap,
      missed: input.missed,
      timeoutMs: input.timeoutMs,
      leaseMs: input.leaseMs,
    } as ScheduledJobOptions);
  } catch (error) {
    if (error instanceof DeclarationError) return fail(error.message.replace(/^Scheduled job "[^"]*": /, ''));
    throw error;
  }
  const data = dataText === null ? null : (JSON.parse(dataText) as unknown);
  const row: ScheduleRow = {
    id,
    handler: input.handler,
    cron: input.cron === undefined ? null : input.cron.trim(),
    everyMs: declaration.schedule instanceof IntervalSchedule ? declaration.schedule.everyMs : null,
    timeZone: input.cron === undefined ? null : (input.timeZone ?? 'UTC'),
    data,
    tenantId: input.tenantId ?? null,
    enabled: input.enabled ?? true,
    overlap: declaration.overlap,
    missed: declaration.missed,
    timeoutMs: declaration.timeoutMs ?? null,
    leaseMs: input.leaseMs === undefined ? null : declaration.leaseMs,
  };
  return { row, declaration: { ...declaration, dynamicSchedule: { id, data, ...(row.tenantId === null ? {} : { tenantId: row.tenantId }) } } };
};

/** What get and list return. */
export const viewOfSchedule = (row: StoredScheduleRow): DynamicScheduleView => ({
  id: row.id,
  handler: row.handler,
  ...(row.cron === null ? { every: Number(row.everyMs) } : { cron: row.cron, timeZone: row.timeZone ?? 'UTC' }),
  data: row.data ?? null,
  ...(row.tenantId === null ? {} : { tenantId: row.tenantId }),
  enabled: row.enabled,
  overlap: row.overlap as DynamicScheduleView['overlap'],
  missed: row.missed as DynamicScheduleView['missed'],
  ...(row.timeoutMs === null ? {} : { timeoutMs: row.timeoutMs }),
  ...(row.leaseMs === null ? {} : { leaseMs: row.leaseMs }),
  version: Number(row.version),
  createdAt: row.createdAt,
  modifiedAt: row.modifiedAt,
});
