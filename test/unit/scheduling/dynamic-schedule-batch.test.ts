import { DeclarationError, DynamicScheduleBatchError, type DynamicScheduleInput } from '../../../src/features';
import { checkScheduleInputs, chunkScheduleRows } from '../../../src/features/scheduling/dynamic/dynamic-schedule-batch';

const known = (name: string) => name === 'reports.tenant-report';
const input = (index: number, overrides: Partial<DynamicScheduleInput> = {}): DynamicScheduleInput => ({
  id: `schedule-${index}`,
  handler: 'reports.tenant-report',
  every: '1h',
  ...overrides,
});
const thrown = (body: () => unknown): unknown => {
  try {
    body();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
};

describe('the inputs of upsertMany', () => {
  it('become the rows upsert would write, in their order', () => {
    const rows = checkScheduleInputs(
      [{ id: 'schedule-2', handler: 'reports.tenant-report', cron: '0 3 * * *', timeZone: 'Europe/Paris', data: { a: 1 } }, input(1)],
      known,
    );
    expect(rows.map((row) => row.id)).toEqual(['schedule-2', 'schedule-1']);
    expect(rows[0]).toMatchObject({ cron: '0 3 * * *', timeZone: 'Europe/Paris', everyMs: null, data: { a: 1 }, enabled: true });
    expect(rows[1]).toMatchObject({ cron: null, everyMs: 3_600_000, data: null });
  });

  it('are refused at the first bad one, which the error names by index and id (a DeclarationError)', () => {
    const error = thrown(() => checkScheduleInputs([input(0), input(1, { every: 'often' }), input(2, { handler: 'nope.nope' })], known));
    expect(error).toBeInstanceOf(DynamicScheduleBatchError);
    expect(error).toBeInstanceOf(DeclarationError);
    expect(error).toMatchObject({ index: 1, scheduleId: 'schedule-1', code: 'DECLARATION_ERROR' });
    expect((error as Error).message).toMatch(/^Scheduled job "schedule-1": upsertMany input 1: .*; nothing was written$/);
  });

  it('name the index of an input without a usable id, and of an input that is not an object', () => {
    expect(thrown(() => checkScheduleInputs([input(0), { handler: 'reports.tenant-report', every: '1h' } as DynamicScheduleInput], known))).toMatchObject({
      index: 1,
      scheduleId: undefined,
      jobName: 'upsertMany input 1',
    });
    expect(thrown(() => checkScheduleInputs([null as unknown as DynamicScheduleInput], known))).toMatchObject({ index: 0, scheduleId: undefined });
    expect(thrown(() => checkScheduleInputs('schedule-1' as unknown as DynamicScheduleInput[], known))).toBeInstanceOf(DynamicScheduleBatchError);
  });

  it('may not give an id twice', () => {
    expect(thrown(() => checkScheduleInputs([input(0), input(1), input(0, { every: '5m' })], known))).toMatchObject({
      index: 2,
      scheduleId: 'schedule-0',
      message: 'Scheduled job "schedule-0": upsertMany input 2: the same id as input 0 (one call writes a schedule once); nothing was written',
    });
  });
});

describe('the statements of upsertMany', () => {
  const rows = (count: number, data: unknown = null) =>
    checkScheduleInputs(
      Array.from({ length: count }, (_, index) => input(index, { data })),
      known,
    );

  it('take the chunk size each, in order, the last one the rest', () => {
    const chunks = chunkScheduleRows(rows(2_501), 1_000);
    expect(chunks.map((chunk) => chunk.length)).toEqual([1_000, 1_000, 501]);
    expect(chunks.flat().map((row) => row.id)).toEqual(rows(2_501).map((row) => row.id));
    expect(chunkScheduleRows([], 1_000)).toEqual([]);
  });

  it('are cut shorter where the rows data would pass the byte bound (a row larger than it goes alone)', () => {
    const data = { text: 'x'.repeat(1_000) };
    const bytes = JSON.stringify(data).length;
    expect(chunkScheduleRows(rows(10, data), 1_000, 3 * bytes).map((chunk) => chunk.length)).toEqual([3, 3, 3, 1]);
    expect(chunkScheduleRows(rows(2, data), 1_000, bytes - 1).map((chunk) => chunk.length)).toEqual([1, 1]);
  });
});
