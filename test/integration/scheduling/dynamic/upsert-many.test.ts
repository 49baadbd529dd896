import type { Pool } from 'pg';
import { DynamicScheduleBatchError, type DynamicScheduleInput } from '../../../../src/features';
import { UPSERT_MANY_CHUNK_ROWS } from '../../../../src/features/scheduling/dynamic/dynamic-schedule-batch';
import type { JobScheduleEngine } from '../../../../src/features/scheduling/job-schedule-engine';
import { PoolStatementCounter } from '../../../support/pool-statement-counter';
import { type DynamicNode, eventually, useDynamicFleet } from './dynamic-nodes';

const fleet = useDynamicFleet();

const engineOf = (node: DynamicNode): JobScheduleEngine => node.schedules['engine'];
const poolOf = (node: DynamicNode): Pool => (node.dataSource.driver as unknown as { master: Pool }).master;
/** The statements that write the schedules' table (one per upsert, one per upsertMany chunk). */
const WRITE = 'INSERT INTO "job-schedule"';

const SEEDED = 10_000;
const input = (index: number, every = '1h'): DynamicScheduleInput => ({
  id: `tenant-${String(index).padStart(5, '0')}/sync`,
  handler: 'reports.tenant-report',
  every,
  data: { n: index },
  tenantId: `tenant-${index}`,
});

const storedCount = async (): Promise<number> => {
  const [row] = await fleet.database.sql<{ count: number }>('SELECT count(*)::int AS count FROM "job-schedule"');
  return row.count;
};

describe('DynamicSchedules.upsertMany', () => {
  it(`seeds ${SEEDED.toLocaleString('en')} schedules in a statement per chunk, and another instance's change poll sees every one`, async () => {
    const writer = await fleet.start('writer', { start: false });
    const reader = await fleet.start('reader', { changePollMs: 200 });
    const counter = new PoolStatementCounter(poolOf(writer));
    writer.statements.reset();
    const inputs = Array.from({ length: SEEDED }, (_, index) => input(index));
    // Not in id order: the views still come back in the inputs' order.
    inputs.reverse();

    const started = performance.now();
    const views = await writer.schedules.upsertMany(inputs);
    const ms = performance.now() - started;
    counter.stop();

    const chunks = Math.ceil(SEEDED / UPSERT_MANY_CHUNK_ROWS);
    process.stdout.write(`upsertMany: ${SEEDED} schedules in ${Math.round(ms)} ms, ${counter.matching(WRITE).length} statements\n`);
    // Counted at the pool (what the driver was asked to send) and at the DataSource's logger.
    expect(counter.matching(WRITE)).toHaveLength(chunks);
    expect(counter.statements).toHaveLength(chunks);
    expect(writer.statements.statements.filter((text) => text.includes(WRITE))).toHaveLength(chunks);

    expect(views.map((view) => view.id)).toEqual(inputs.map((one) => one.id));
    expect(views[0]).toMatchObject({ id: inputs[0].id, every: 3_600_000, data: inputs[0].data, tenantId: inputs[0].tenantId, enabled: true });
    // Each schedule its own version, as upsert gives it.
    expect(new Set(views.map((view) => view.version)).size).toBe(SEEDED);
    expect(await storedCount()).toBe(SEEDED);

    await eventually(() => engineOf(reader).jobNames.length === SEEDED, 30_000, `the reader to run all ${SEEDED} schedules`);
    expect(engineOf(reader).jobNames.sort()).toEqual(inputs.map((one) => one.id).sort());
    const sample = engineOf(reader).job(inputs[1234].id);
    expect(sample?.declaration.dynamicSchedule).toEqual({ id: inputs[1234].id, data: { n: SEEDED - 1 - 1234 }, tenantId: `tenant-${SEEDED - 1 - 1234}` });
  }, 120_000);

  it('writes each row as upsert does: a changed schedule gets a new version, a removed one comes back, and other instances follow', async () => {
    const writer = await fleet.start('writer');
    const reader = await fleet.start('reader', { changePollMs: 200 });
    const [kept, removed] = [await writer.schedules.upsert(input(1)), await writer.schedules.upsert(input(2))];
    expect(await writer.schedules.remove(input(2).id)).toBe(true);
    await reader.schedules.refresh();
    expect(engineOf(reader).job(input(2).id)).toBeUndefined();

    const views = await writer.schedules.upsertMany([input(1, '2h'), input(2, '3h'), { ...input(3), enabled: false }]);
    expect(views.map((view) => view.every)).toEqual([7_200_000, 10_800_000, 3_600_000]);
    expect(views[0].version).toBeGreaterThan(removed.version);
    expect(views[0].createdAt).toEqual(kept.createdAt);
    expect(views[1].createdAt.getTime()).toBeGreaterThanOrEqual(removed.createdAt.getTime());
    expect(views[2].enabled).toBe(false);
    // Applied on the writer at once, as upsert's are.
    expect(engineOf(writer).job(input(2).id)).toBeDefined();

    await eventually(() => engineOf(reader).job(input(2).id) !== undefined, 10_000, 'the reader to run the schedule written again');
    for (const node of [writer, reader]) {
      expect((engineOf(node).job(input(1).id)?.declaration.schedule as { everyMs?: number }).everyMs).toBe(7_200_000);
      expect((engineOf(node).job(input(2).id)?.declaration.schedule as { everyMs?: number }).everyMs).toBe(10_800_000);
    }
    expect(await writer.schedules.get(input(3).id)).toMatchObject({ enabled: false, version: views[2].version });
  });

  it('writes nothing, and sends no statement, when an input in the middle is bad: the error names its index and id', async () => {
    const writer = await fleet.start('writer', { start: false });
    const counter = new PoolStatementCounter(poolOf(writer));
    const inputs = Array.from({ length: 3 * UPSERT_MANY_CHUNK_ROWS }, (_, index) => input(index));
    const bad = Math.floor(inputs.length / 2);
    inputs[bad] = { ...inputs[bad], handler: 'reports.no-such-handler' };

    const error = await writer.schedules.upsertMany(inputs).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(DynamicScheduleBatchError);
    expect(error).toMatchObject({ index: bad, scheduleId: inputs[bad].id, jobName: inputs[bad].id });
    expect((error as Error).message).toBe(
      `Scheduled job "${inputs[bad].id}": upsertMany input ${bad}: no @ScheduleHandler('reports.no-such-handler') in this application; nothing was written`,
    );
    expect(counter.statements).toEqual([]);
    expect(await storedCount()).toBe(0);
  });

  it('refuses an id given twice in one call before any SQL', async () => {
    const writer = await fleet.start('writer', { start: false });
    const counter = new PoolStatementCounter(poolOf(writer));
    const inputs = [input(0), input(1), input(2), { ...input(0), every: '5m' }];
    await expect(writer.schedules.upsertMany(inputs)).rejects.toThrow(
      new DynamicScheduleBatchError(3, input(0).id, 'the same id as input 0 (one call writes a schedule once)'),
    );
    expect(counter.statements).toEqual([]);
    expect(await storedCount()).toBe(0);
    expect(await writer.schedules.upsertMany([])).toEqual([]);
    expect(counter.statements).toEqual([]);
  });
});
