import { DeclarationError } from '../../../../src/features';
import { sleep } from '../../../support/lease-nodes';
import { calls, eventually, useDynamicFleet } from './dynamic-nodes';

const fleet = useDynamicFleet();
const { nodes, start } = fleet;

const occurrenceRows = (id: string) =>
  fleet.database.sql<{ runKey: string; status: string; ownerId: string }>(
    `SELECT "runKey", status::text AS status, "ownerId" FROM "job-scheduler" WHERE "runKey" LIKE $1 ORDER BY "runKey"`,
    [`schedule=${encodeURIComponent(id)} %`],
  );

describe('dynamic schedules', () => {
  it('a schedule created on one instance runs on another, with its id, data and tenant', async () => {
    const writer = await start('writer', { start: false });
    const runner = await start('runner');
    const view = await writer.schedules.upsert({
      id: 'tenant-42/weekly report',
      handler: 'reports.tenant-report',
      every: '1s',
      data: { format: 'pdf' },
      tenantId: '42',
    });
    expect(view).toMatchObject({
      id: 'tenant-42/weekly report',
      handler: 'reports.tenant-report',
      every: 1_000,
      enabled: true,
      tenantId: '42',
      data: { format: 'pdf' },
    });
    await eventually(() => calls.length >= 2, 10_000, 'two runs on the runner');
    expect(calls.every((call) => call.node === 'runner')).toBe(true);
    const [first] = calls;
    expect(first.execution.schedule).toEqual({ id: 'tenant-42/weekly report', data: { format: 'pdf' }, tenantId: '42' });
    expect(first.execution.tenantId).toBe('42');
    expect(first.execution.name).toBe('reports.tenant-report');
    expect(first.execution.trigger).toBe('schedule');
    expect(Date.parse(first.scheduledAt) % 1_000).toBe(0);
    expect(first.execution.idempotencyKey).toEqual(expect.any(String));
    await runner.schedules.idle();
    const rows = await occurrenceRows('tenant-42/weekly report');
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows.every((row) => row.ownerId === 'runner')).toBe(true);
    expect(await writer.schedules.get('tenant-42/weekly report')).toMatchObject({ id: 'tenant-42/weekly report', version: view.version });
  });

  it('changing a schedule while its occurrence is due runs that occurrence once; removing it stops it everywhere', async () => {
    const a = await start('a');
    const b = await start('b');
    await a.schedules.upsert({ id: 'sync-crm', handler: 'integrations.poll', every: '1s' });
    await eventually(() => calls.length >= 2, 10_000, 'runs');
    // Changed right at a due instant, from both instances, several times.
    const due = Math.ceil((Date.now() + 300) / 1_000) * 1_000;
    await sleep(due - Date.now());
    await Promise.all([
      a.schedules.upsert({ id: 'sync-crm', handler: 'integrations.poll', every: 1_000, data: { n: 1 } }),
      b.schedules.upsert({ id: 'sync-crm', handler: 'integrations.poll', every: '2s', data: { n: 2 } }),
    ]);
    await sleep(2_500);
    const keys = calls.map((call) => call.scheduledAt);
    expect(new Set(keys).size).toBe(keys.length);

    expect(await b.schedules.remove('sync-crm')).toBe(true);
    expect(await b.schedules.remove('sync-crm')).toBe(false);
    expect(await a.schedules.get('sync-crm')).toBeNull();
    // Within the change poll (200 ms) plus margin, no instance starts another occurrence.
    await sleep(1_000);
    await Promise.all(nodes.map((node) => node.schedules.idle()));
    const after = calls.length;
    await sleep(2_500);
    expect(calls.length).toBe(after);
    const rows = await occurrenceRows('sync-crm');
    expect(new Set(rows.map((row) => row.runKey)).size).toBe(rows.length);
  });

  it('a handler that throws fails only its own occurrence', async () => {
    const a = await start('a');
    await a.schedules.upsert({ id: 'crm-down', handler: 'integrations.poll', every: '1s', data: { fail: true } });
    await a.schedules.upsert({ id: 'crm-up', handler: 'integrations.poll', every: '1s' });
    await eventually(
      () => a.schedules.runs.filter((run) => run.outcome === 'failed').length >= 1 && a.schedules.runs.some((run) => run.outcome === 'succeeded'),
      10_000,
      'a failure and a success',
    );
    await a.schedules.idle();
    const failed = a.schedules.runs.filter((run) => run.outcome === 'failed');
    expect(failed.every((run) => run.scheduleId === 'crm-down' && run.errorCode === 'JOB_FAILED')).toBe(true);
    expect(a.schedules.runs.filter((run) => run.outcome === 'succeeded').every((run) => run.scheduleId === 'crm-up')).toBe(true);
    expect((await occurrenceRows('crm-down')).every((row) => row.status === 'FAIL')).toBe(true);
  });

  it('invalid upserts are refused before any SQL and store nothing', async () => {
    const a = await start('a');
    a.statements.reset();
    const invalid: unknown[] = [
      { id: '', handler: 'reports.tenant-report', every: '1m' },
      { id: 'x'.repeat(257), handler: 'reports.tenant-report', every: '1m' },
      { id: 'nul\u0000', handler: 'reports.tenant-report', every: '1m' },
      { id: 'a', handler: 'reports.unknown-handler', every: '1m' },
      { id: 'a', handler: 'Not A Name', every: '1m' },
      { id: 'a', handler: 'reports.tenant-report' },
      { id: 'a', handler: 'reports.tenant-report', every: '1m', cron: '* * * * *' },
      { id: 'a', handler: 'reports.tenant-report', cron: '61 * * * *' },
      { id: 'a', handler: 'reports.tenant-report', cron: '0 8 * * 1', timeZone: 'Mars/Olympus' },
      { id: 'a', handler: 'reports.tenant-report', every: 'soon' },
      { id: 'a', handler: 'reports.tenant-report', every: '1m', timeZone: 'UTC' },
      { id: 'a', handler: 'reports.tenant-report', every: '1m', overlap: 'sometimes' },
      { id: 'a', handler: 'reports.tenant-report', every: '1m', data: () => 1 },
      { id: 'a', handler: 'reports.tenant-report', every: '1m', data: { big: 'x'.repeat(70_000) } },
      { id: 'a', handler: 'reports.tenant-report', every: '1m', tenantId: 'bad\u0000' },
      { id: 'a', handler: 'reports.tenant-report', every: '1m', enabled: 'yes' },
      { id: 'a', handler: 'reports.tenant-report', every: '1m', colour: 'blue' },
    ];
    for (const input of invalid) {
      await expect(a.schedules.upsert(input as never)).rejects.toBeInstanceOf(DeclarationError);
    }
    await expect(a.schedules.remove('')).rejects.toBeInstanceOf(DeclarationError);
    expect(a.statements.statements.filter((text) => text.includes('"job-schedule"') && !text.includes('"version" > $1'))).toEqual([]);
    expect(await fleet.database.sql('SELECT 1 FROM "job-schedule"')).toHaveLength(0);
  });

  it('lists schedules by handler, tenant and state, a page at a time', async () => {
    const a = await start('a', { start: false });
    for (let index = 0; index < 7; index++) {
      await a.schedules.upsert({
        id: `s-${index}`,
        handler: index % 2 ? 'integrations.poll' : 'reports.tenant-report',
        cron: '0 8 * * 1',
        timeZone: 'America/New_York',
        tenantId: index < 3 ? 't1' : 't2',
        enabled: index !== 6,
      });
    }
    const first = await a.schedules.list({ limit: 3 });
    expect(first.schedules.map((view) => view.id)).toEqual(['s-0', 's-1', 's-2']);
    const second = await a.schedules.list({ limit: 3, after: first.nextCursor });
    expect(second.schedules.map((view) => view.id)).toEqual(['s-3', 's-4', 's-5']);
    const last = await a.schedules.list({ limit: 3, after: second.nextCursor });
    expect(last).toEqual({ schedules: [expect.objectContaining({ id: 's-6', enabled: false })] });
    expect((await a.schedules.list({ handler: 'integrations.poll' })).schedules.map((view) => view.id)).toEqual(['s-1', 's-3', 's-5']);
    expect((await a.schedules.list({ tenantId: 't1' })).schedules.map((view) => view.id)).toEqual(['s-0', 's-1', 's-2']);
    expect((await a.schedules.list({ enabled: false })).schedules.map((view) => view.id)).toEqual(['s-6']);
    expect(first.schedules[0]).toMatchObject({ cron: '0 8 * * 1', timeZone: 'America/New_York', overlap: 'skip', missed: 'drop' });
  });
});
