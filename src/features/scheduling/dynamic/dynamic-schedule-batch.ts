import { DeclarationError, DynamicScheduleBatchError } from '../scheduling.errors';
import { checkScheduleInput } from './dynamic-schedule-input';
import type { ScheduleRow } from './dynamic-schedule.sql';
import type { DynamicScheduleInput } from './dynamic-schedule.types';

/**
 * Rows per upsertMany statement. Measured seeding 100,000 schedules on the bench machine (see
 * CHANGELOG / docs-notes): past this size a statement saves no more time per row, while a writer
 * waiting on the table's lock (every schedule write takes it) waits a whole statement.
 */
export const UPSERT_MANY_CHUNK_ROWS = 1_000;
/** A statement's schedule data at most (JSON bytes): a chunk of large `data` is cut short of this. */
export const UPSERT_MANY_CHUNK_DATA_BYTES = 8 * 1024 * 1024;

/** The reason of a DeclarationError without its "Scheduled job "…": " prefix. */
const reasonOf = (error: DeclarationError): string => {
  const prefix = `Scheduled job "${error.jobName}": `;
  return error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
};

/**
 * Checks every input as `upsert` does, and that no id comes twice, before any SQL: the rows to
 * write, in the inputs' order. Throws DynamicScheduleBatchError naming the first bad input.
 */
export const checkScheduleInputs = (inputs: readonly DynamicScheduleInput[], knownHandler: (name: string) => boolean): ScheduleRow[] => {
  if (!Array.isArray(inputs)) throw new DynamicScheduleBatchError(0, undefined, 'upsertMany takes an array of { id, handler, cron | every, ... }');
  const seen = new Map<string, number>();
  return inputs.map((input: unknown, index) => {
    const id = typeof input === 'object' && input !== null && typeof (input as { id?: unknown }).id === 'string' ? (input as { id: string }).id : undefined;
    let row: ScheduleRow;
    try {
      ({ row } = checkScheduleInput(input as DynamicScheduleInput, knownHandler));
    } catch (error) {
      if (error instanceof DeclarationError) throw new DynamicScheduleBatchError(index, id, reasonOf(error));
      throw error;
    }
    const earlier = seen.get(row.id);
    if (earlier !== undefined) throw new DynamicScheduleBatchError(index, row.id, `the same id as input ${earlier} (one call writes a schedule once)`);
    seen.set(row.id, index);
    return row;
  });
};

/** The rows cut into statements: `maxRows` each, fewer where their data would pass `maxDataBytes`. */
export const chunkScheduleRows = (
  rows: readonly ScheduleRow[],
  maxRows = UPSERT_MANY_CHUNK_ROWS,
  maxDataBytes = UPSERT_MANY_CHUNK_DATA_BYTES,
): ScheduleRow[][] => {
  const chunks: ScheduleRow[][] = [];
  let chunk: ScheduleRow[] = [];
  let bytes = 0;
  for (const row of rows) {
    const rowBytes = row.data === null || row.data === undefined ? 0 : Buffer.byteLength(JSON.stringify(row.data));
    if (chunk.length > 0 && (chunk.length >= maxRows || bytes + rowBytes > maxDataBytes)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(row);
    bytes += rowBytes;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
};
