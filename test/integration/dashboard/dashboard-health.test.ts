import { JobRunsInspector } from '../../../src/features/job-scheduler/operations/job-runs.inspector';
import {
  HEALTH_DAY_MS,
  HEALTH_WINDOW_ROWS,
  healthWindowOf,
  lastSuccessOf,
  stateOf,
  stateWindowOf,
  windowState,
} from '../../../src/features/dashboard/dashboard-health';
import { JobSchedulerDashboardSchedules } from '../../../src/features/dashboard/dashboard-schedules';
import { InvalidJobQueryOptionsError } from '../../../src/features/job-scheduler/job-scheduler.errors';
import type { DynamicSchedules } from '../../../src/features/scheduling/dynamic/dynamic-schedules.service';
import type { DynamicScheduleView } from '../../../src/features/scheduling/dynamic/dynamic-schedule.types';
import { scheduleRunKeyPrefix } from '../../../src/features/scheduling/occurrence/occurrence-keys';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

let database: TestDatabase;
let inspector: JobRunsInspector;
beforeAll(async () => {
  database = await createTestDatabase();
  inspector = new JobRunsInspector(await database.dataSource());
});
afterAll(async () => {
  await database.drop();
});

const MINUTE = 60_000;
const now = Math.floor(Date.now() / MINUTE) * MINUTE;
const dueAgo = (minutes: number): string => new Date(now - minutes * MINUTE).toISOString();

interface Seeded {
  code: string;
  runKey: string;
  status: 'RUNNING' | 'SUCCESS' | 'FAIL';
  data?: unknown;
  /** From the claim (startedAt) to the finish. */
  claimToFinishMs?: number;
  /** 2 and more: taken over from a vanished first owner (1 unless told). */
  attempts?: number;
}

/** Rows as the scheduler leaves them: claimed (startedAt), finished `claimToFinishMs` later unless RUNNING. */
const seed = async (rows: readonly Seeded[]): Promise<void> => {
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts, data,
       "startedAt", "finishedAt", "createdAt", "modifiedAt")
     SELECT 'seed:' || r.code || ':' || r."runKey", r.code, 'SCHEDULE', r.status::"job-scheduler_status_enum", gen_random_uuid(), r."runKey", 60000, 'seed-node',
       nextval('"job-scheduler_fencingToken_seq"'), r.attempts, r.data, now() - interval '1 hour',
       CASE WHEN r.status = 'RUNNING' THEN NULL ELSE now() - interval '1 hour' + r.ms * interval '1 millisecond' END, now(), now()
     FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::int[], $6::int[]) AS r(code, "runKey", status, data, ms, attempts)`,
    [
      rows.map((row) => row.code),
      rows.map((row) => row.runKey),
      rows.map((row) => row.status),
      rows.map((row) => (row.data === undefined ? null : JSON.stringify(row.data))),
      rows.map((row) => row.claimToFinishMs ?? 1_000),
      rows.map((row) => row.attempts ?? 1),
    ],
  );
};

const windowsOf = async (codes: readonly string[]) => inspector.healthWindows(codes, HEALTH_WINDOW_ROWS, new Date(now - HEALTH_DAY_MS));

describe("a job's health window, computed by PostgreSQL", () => {
  beforeAll(async () => {
    await seed([
      // health.mixed, newest first: running, three failures in a row, successes, and before 24 h.
      { code: 'health.mixed', runKey: dueAgo(1), status: 'RUNNING' },
      { code: 'health.mixed', runKey: dueAgo(2), status: 'FAIL', data: { error: { name: 'Error', message: 'disk full' } }, claimToFinishMs: 3_000 },
      { code: 'health.mixed', runKey: `${dueAgo(3)} tenant=acme`, status: 'FAIL', data: { outcome: 'missed', missed: 1 }, claimToFinishMs: 5 },
      { code: 'health.mixed', runKey: dueAgo(4), status: 'FAIL', data: { error: { name: 'Error', message: 'x'.repeat(600) }, handlerMs: 900 } },
      ...Array.from({ length: 12 }, (_, index): Seeded => ({
        code: 'health.mixed',
        runKey: dueAgo(60 * (index + 1)),
        status: 'SUCCESS',
        // The handler's run time where recorded (every other one), else claim to finish.
        data: index % 2 === 0 ? { handlerMs: 100 * (index + 1) } : null,
        claimToFinishMs: 2_000 + index,
      })),
      // A handlerMs that is not a number is not read (claim to finish instead).
      { code: 'health.mixed', runKey: dueAgo(13 * 60), status: 'SUCCESS', data: { handlerMs: 'fast' }, claimToFinishMs: 4_000 },
      { code: 'health.mixed', runKey: dueAgo(25 * 60), status: 'FAIL', data: { error: { name: 'Error', message: 'old' } }, claimToFinishMs: 99_000 },
      { code: 'health.mixed', runKey: dueAgo(26 * 60), status: 'SUCCESS', claimToFinishMs: 98_000 },
      // A run asked with runNow is no occurrence: not in the window.
      { code: 'health.mixed', runKey: `run-now ${dueAgo(0)} 00000000-0000-4000-8000-000000000000`, status: 'FAIL', data: { error: { message: 'asked' } } },
      // health.recovered: two failures, then a success.
      { code: 'health.recovered', runKey: dueAgo(1), status: 'SUCCESS', data: { handlerMs: 40 } },
      { code: 'health.recovered', runKey: dueAgo(2), status: 'FAIL', data: { outcome: 'skipped-overlap' } },
      { code: 'health.recovered', runKey: dueAgo(3), status: 'FAIL', data: {} },
      // health.broken: never succeeded, the newest failure without message or outcome.
      { code: 'health.broken', runKey: dueAgo(10), status: 'FAIL', data: null, claimToFinishMs: 7 },
      { code: 'health.broken', runKey: dueAgo(20), status: 'FAIL', data: { error: { message: 'first' } }, claimToFinishMs: 9 },
      { code: 'health.broken', runKey: dueAgo(30), status: 'FAIL', data: { error: { message: 'first' } }, claimToFinishMs: 11 },
      // health.quiet: ran only before the last 24 h.
      { code: 'health.quiet', runKey: dueAgo(3 * 24 * 60), status: 'SUCCESS' },
    ]);
    // health.dense: every minute for 400 minutes, every 10th failed, handler run times 1..400 ms.
    await seed(
      Array.from({ length: 400 }, (_, index) => ({
        code: 'health.dense',
        runKey: dueAgo(index + 1),
        status: index % 10 === 9 ? 'FAIL' : 'SUCCESS',
        data: { handlerMs: index + 1 },
      })),
    );
  });

  it('counts the last 10 and the last 24 h, failures in a row, the newest error and duration percentiles of each job, one row per job', async () => {
    const codes = ['health.mixed', 'health.recovered', 'health.broken', 'health.quiet', 'health.never-ran'];
    const windows = await windowsOf(codes);
    expect([...windows.keys()].sort()).toEqual([...codes].sort());
    // The day's durations of health.mixed, newest first: 3,000, 5, 900 (handlerMs), then the
    // hourly successes (100, 2,001, 300, 2,003, ...), then 4,000 ('fast' is no number).
    const hourly = Array.from({ length: 12 }, (_, index) => (index % 2 === 0 ? 100 * (index + 1) : 2_000 + index));
    const day = [3_000, 5, 900, ...hourly, 4_000];
    const sorted = [...day].sort((a, b) => a - b);
    expect(healthWindowOf(windows.get('health.mixed'))).toEqual({
      last10: { finished: 10, succeeded: 7 },
      last24h: { finished: 16, succeeded: 13 },
      consecutiveFailures: 3,
      lastError: { at: dueAgo(2), message: 'disk full' },
      durationMs: { p50: sorted[7], p95: sorted[15], recent: [...day].reverse() },
    });
    expect(lastSuccessOf(windows.get('health.mixed'))).toBe(dueAgo(60));
    expect(healthWindowOf(windows.get('health.recovered'))).toEqual({
      last10: { finished: 3, succeeded: 1 },
      last24h: { finished: 3, succeeded: 1 },
      consecutiveFailures: 0,
      lastError: { at: dueAgo(2), message: 'recorded skipped-overlap' },
      durationMs: { p50: 1_000, p95: 1_000, recent: [1_000, 1_000, 40] },
    });
    expect(healthWindowOf(windows.get('health.broken'))).toEqual({
      last10: { finished: 3, succeeded: 0 },
      last24h: { finished: 3, succeeded: 0 },
      consecutiveFailures: 3,
      lastError: { at: dueAgo(10), message: 'failed (no message recorded)' },
      durationMs: { p50: 9, p95: 11, recent: [11, 9, 7] },
    });
    expect(lastSuccessOf(windows.get('health.broken'))).toBeNull();
    expect(healthWindowOf(windows.get('health.quiet'))).toEqual({
      last10: { finished: 1, succeeded: 1 },
      last24h: { finished: 0, succeeded: 0 },
      consecutiveFailures: 0,
      lastError: null,
      durationMs: null,
    });
    expect(lastSuccessOf(windows.get('health.quiet'))).toBe(dueAgo(3 * 24 * 60));
    expect(healthWindowOf(windows.get('health.never-ran'))).toEqual({
      last10: { finished: 0, succeeded: 0 },
      last24h: { finished: 0, succeeded: 0 },
      consecutiveFailures: 0,
      lastError: null,
      durationMs: null,
    });
    expect(lastSuccessOf(windows.get('health.never-ran'))).toBeNull();
  });

  it('keeps the error message to 500 characters', async () => {
    await seed([{ code: 'health.long-error', runKey: dueAgo(1), status: 'FAIL', data: { error: { message: 'y'.repeat(600) } } }]);
    expect(healthWindowOf((await windowsOf(['health.long-error'])).get('health.long-error')).lastError?.message).toBe('y'.repeat(500));
  });

  it("reads a bounded number of each job's newest rows: a job every minute has 300 of its last 24 h in the window", async () => {
    const window = healthWindowOf((await windowsOf(['health.dense'])).get('health.dense'));
    // Rows 1..300 (newest first) are read: every 10th failed; the newest, row 1, succeeded.
    expect(window.last10).toEqual({ finished: 10, succeeded: 9 });
    expect(window.last24h).toEqual({ finished: 300, succeeded: 270 });
    expect(window.consecutiveFailures).toBe(0);
    expect(window.lastError).toEqual({ at: dueAgo(10), message: 'failed (no message recorded)' });
    expect(window.durationMs).toEqual({ p50: 150, p95: 285, recent: Array.from({ length: 30 }, (_, index) => 30 - index) });
  });

  it('a job failing half its runs is failing at every refresh (no flicker), one failing once is degraded', async () => {
    // Every minute, alternately failed and succeeded; each refresh sees the window one run later.
    const alternating = (code: string, shift: number): Seeded[] =>
      Array.from({ length: 40 }, (_, index) => ({ code, runKey: dueAgo(index + 1), status: (index + shift) % 2 === 0 ? 'FAIL' : 'SUCCESS' }));
    await seed([
      ...[0, 1, 2, 3].flatMap((shift) => alternating(`flicker.shift-${shift}`, shift)),
      { code: 'flicker.once', runKey: dueAgo(1), status: 'FAIL', data: { error: { message: 'boom' } } },
      ...Array.from({ length: 20 }, (_, index): Seeded => ({ code: 'flicker.once', runKey: dueAgo(index + 2), status: 'SUCCESS' })),
      ...Array.from({ length: 20 }, (_, index): Seeded => ({ code: 'flicker.never', runKey: dueAgo(index + 2), status: 'SUCCESS' })),
      { code: 'flicker.twice', runKey: dueAgo(1), status: 'FAIL' },
      { code: 'flicker.twice', runKey: dueAgo(2), status: 'FAIL' },
      { code: 'flicker.twice', runKey: dueAgo(3), status: 'SUCCESS' },
    ]);
    const codes = ['flicker.shift-0', 'flicker.shift-1', 'flicker.shift-2', 'flicker.shift-3', 'flicker.once', 'flicker.never', 'flicker.twice'];
    const windows = await windowsOf(codes);
    expect(codes.map((code) => windowState(healthWindowOf(windows.get(code))))).toEqual([
      'failing',
      'failing',
      'failing',
      'failing',
      'degraded',
      'ok',
      'failing',
    ]);
  });
});

describe("every job's state from its 10 newest finished occurrences (the failing list over all jobs)", () => {
  it('agrees with the window on ok, degraded and failing, skips running rows, caps failures in a row at 10, and names the newest failure', async () => {
    await seed([
      // Alternately failed and succeeded (failing), one failure among 20 (degraded), none (ok).
      ...Array.from({ length: 30 }, (_, index): Seeded => ({
        code: 'state.alternating',
        runKey: dueAgo(index + 1),
        status: index % 2 === 0 ? 'FAIL' : 'SUCCESS',
      })),
      { code: 'state.once', runKey: dueAgo(3), status: 'FAIL' },
      ...Array.from({ length: 20 }, (_, index): Seeded => ({ code: 'state.once', runKey: dueAgo(index + 4), status: 'SUCCESS' })),
      ...Array.from({ length: 20 }, (_, index): Seeded => ({ code: 'state.never', runKey: dueAgo(index + 1), status: 'SUCCESS' })),
      // Running now, after 12 failures in a row: the running rows are not counted.
      { code: 'state.down', runKey: dueAgo(1), status: 'RUNNING' },
      { code: 'state.down', runKey: dueAgo(2), status: 'RUNNING' },
      { code: 'state.down', runKey: dueAgo(3), status: 'FAIL', data: { error: { name: 'Error', message: 'db down' } } },
      ...Array.from({ length: 11 }, (_, index): Seeded => ({
        code: 'state.down',
        runKey: dueAgo(index + 4),
        status: 'FAIL',
        data: { outcome: 'missed', missed: 1 },
      })),
      { code: 'state.down', runKey: dueAgo(15), status: 'SUCCESS' },
    ]);
    const codes = ['state.alternating', 'state.once', 'state.never', 'state.down', 'state.none'];
    const [states, windows] = await Promise.all([inspector.healthStates(codes), windowsOf(codes)]);
    expect(codes.map((code) => stateOf(states.get(code)))).toEqual(['failing', 'degraded', 'ok', 'failing', 'ok']);
    expect(codes.map((code) => stateOf(states.get(code)))).toEqual(codes.map((code) => windowState(healthWindowOf(windows.get(code)))));
    expect(stateWindowOf(states.get('state.down'))).toEqual({
      last10: { finished: 10, succeeded: 0 },
      consecutiveFailures: 10,
      lastError: { at: dueAgo(3), message: 'db down' },
    });
    // The window reads further: 12 in a row.
    expect(healthWindowOf(windows.get('state.down')).consecutiveFailures).toBe(12);
    expect(stateWindowOf(states.get('state.alternating')).lastError).toEqual({ at: dueAgo(1), message: 'failed (no message recorded)' });
    expect(stateWindowOf(states.get('state.none'))).toEqual({ last10: { finished: 0, succeeded: 0 }, consecutiveFailures: 0, lastError: null });
  });

  it('refuses bad codes with InvalidJobQueryOptionsError, before any SQL', async () => {
    for (const codes of [[''], ['x'.repeat(65)], ['nul\u0000'], [7 as unknown as string], 'a' as unknown as string[]]) {
      await expect(inspector.healthStates(codes)).rejects.toThrow(InvalidJobQueryOptionsError);
    }
  });
});

describe("dynamic schedules' health windows: each schedule's runKey range under its handler's code", () => {
  const HANDLER = 'report.send';
  /** A schedule's occurrence key: its prefix, then the due instant. */
  const keyOf = (id: string, minutesAgo: number): string => `${scheduleRunKeyPrefix(id)}${dueAgo(minutesAgo)}`;
  const HOUR = 3_600_000;
  /** A schedule last changed `modifiedAgoMs` ago (a day unless told): late counts the occurrences due since then, or since its last success if later. */
  const view = (id: string, every: number, enabled = true, modifiedAgoMs = 86_400_000): DynamicScheduleView => ({
    id,
    handler: HANDLER,
    every,
    data: null,
    enabled,
    overlap: 'skip',
    missed: 'drop',
    version: 1,
    createdAt: new Date(now - 2 * 86_400_000),
    modifiedAt: new Date(now - modifiedAgoMs),
  });
  // The page's schedules, as DynamicSchedules.list gives them (their stored rows are not what is
  // tested here: their occurrence rows, in PostgreSQL, are).
  const views = [
    view('report/a', HOUR),
    view('report-b', HOUR),
    view('report-b2', HOUR, true, 30 * MINUTE),
    view('report-never', HOUR),
    view('report-c', HOUR, false),
    view('report-late', MINUTE),
    view('report-taken', HOUR),
    view('report-new', HOUR, true, 30 * MINUTE),
  ];
  const pages = { list: () => Promise.resolve({ schedules: views }) } as unknown as DynamicSchedules;

  beforeAll(async () => {
    await seed([
      // The handler run as a declared job of the same name: bare instants, all failed. None of it is a schedule's.
      ...Array.from({ length: 5 }, (_, index): Seeded => ({
        code: HANDLER,
        runKey: dueAgo(index + 1),
        status: 'FAIL',
        data: { error: { message: 'declared' } },
      })),
      // report/a: failed twice in a row after a success; a runNow of it failed too (no occurrence).
      { code: HANDLER, runKey: keyOf('report/a', 1), status: 'FAIL', data: { error: { name: 'Error', message: 'smtp down' } } },
      { code: HANDLER, runKey: keyOf('report/a', 2), status: 'FAIL', data: { error: { name: 'Error', message: 'smtp slow' } } },
      { code: HANDLER, runKey: keyOf('report/a', 3), status: 'SUCCESS', data: { handlerMs: 20 } },
      { code: HANDLER, runKey: `run-now ${dueAgo(0)} 00000000-0000-4000-8000-000000000000 schedule=report%2Fa`, status: 'FAIL' },
      // report-b: running now, succeeded before.
      { code: HANDLER, runKey: keyOf('report-b', 1), status: 'RUNNING' },
      { code: HANDLER, runKey: keyOf('report-b', 2), status: 'SUCCESS', data: { handlerMs: 30 } },
      { code: HANDLER, runKey: keyOf('report-b', 3), status: 'SUCCESS', data: { handlerMs: 50 } },
      // report-b2 (whose id starts with report-b's): failed; not in report-b's range.
      { code: HANDLER, runKey: keyOf('report-b2', 1), status: 'FAIL', data: { error: { message: 'b2' } } },
      // report-c (paused): its last occurrence missed.
      { code: HANDLER, runKey: keyOf('report-c', 5), status: 'FAIL', data: { outcome: 'missed', missed: 1 } },
      // report-late, every minute: its last success 10 minutes ago, nothing since.
      { code: HANDLER, runKey: keyOf('report-late', 10), status: 'SUCCESS' },
      // report-taken: taken over from a vanished first owner.
      { code: HANDLER, runKey: keyOf('report-taken', 1), status: 'SUCCESS', attempts: 2 },
    ]);
  });

  it("reads one window per (code, prefix) pair in one statement, the handler's declared-job rows and other schedules' rows apart", async () => {
    const pairs = views.map((candidate) => ({ code: HANDLER, prefix: scheduleRunKeyPrefix(candidate.id) }));
    const rows = await inspector.prefixedHealthWindows([...pairs, { code: HANDLER, prefix: '' }], HEALTH_WINDOW_ROWS, new Date(now - HEALTH_DAY_MS));
    expect(rows.map((row) => [row.prefix, row.lastOutcome])).toEqual([
      ['schedule=report%2Fa ', 'failed'],
      ['schedule=report-b ', 'succeeded'],
      ['schedule=report-b2 ', 'failed'],
      ['schedule=report-never ', null],
      ['schedule=report-c ', 'missed'],
      ['schedule=report-late ', 'succeeded'],
      ['schedule=report-taken ', 'taken-over'],
      ['schedule=report-new ', null],
      ['', 'failed'],
    ]);
    // The keys come without the prefix.
    expect(rows[0]?.lastSuccessKey).toBe(dueAgo(3));
    expect(rows[0]?.lastFailureKey).toBe(dueAgo(1));
    expect(healthWindowOf(rows[8]).last10).toEqual({ finished: 5, succeeded: 0 });
  });

  it('lists each schedule with its window, last success, last outcome and health', async () => {
    const page = await new JobSchedulerDashboardSchedules(inspector, pages).page({}, now);
    const byId = new Map(page.schedules.map((schedule) => [schedule.id, schedule]));
    expect(byId.get('report/a')).toMatchObject({
      lastSuccessAt: dueAgo(3),
      lastOutcome: 'failed',
      health: 'failing',
      window: {
        last10: { finished: 3, succeeded: 1 },
        last24h: { finished: 3, succeeded: 1 },
        consecutiveFailures: 2,
        lastError: { at: dueAgo(1), message: 'smtp down' },
        durationMs: { p50: 1_000, p95: 1_000, recent: [20, 1_000, 1_000] },
      },
    });
    expect(byId.get('report-b')).toMatchObject({
      lastSuccessAt: dueAgo(2),
      lastOutcome: 'succeeded',
      health: 'ok',
      window: {
        last10: { finished: 2, succeeded: 2 },
        last24h: { finished: 2, succeeded: 2 },
        consecutiveFailures: 0,
        lastError: null,
        durationMs: { p50: 30, p95: 50, recent: [50, 30] },
      },
    });
    expect(byId.get('report-b2')).toMatchObject({ lastSuccessAt: null, lastOutcome: 'failed', health: 'degraded' });
    // Hourly, changed a day ago, never run: late (as the declared job of its name is not counted).
    expect(byId.get('report-never')).toMatchObject({ lastSuccessAt: null, lastOutcome: null, health: 'late' });
    expect(byId.get('report-c')).toMatchObject({
      lastOutcome: 'missed',
      health: 'disabled',
      window: { lastError: { at: dueAgo(5), message: 'recorded missed' } },
    });
    expect(byId.get('report-late')).toMatchObject({ lastSuccessAt: dueAgo(10), lastOutcome: 'succeeded', health: 'late' });
    expect(byId.get('report-taken')).toMatchObject({ lastOutcome: 'taken-over', health: 'ok' });
    expect(byId.get('report-new')).toMatchObject({
      lastSuccessAt: null,
      lastOutcome: null,
      health: 'ok',
      window: { last10: { finished: 0, succeeded: 0 }, last24h: { finished: 0, succeeded: 0 }, consecutiveFailures: 0, lastError: null, durationMs: null },
    });
  });

  it('refuses bad pairs, limits and days with InvalidJobQueryOptionsError, before any SQL', async () => {
    const dayFrom = new Date(now - HEALTH_DAY_MS);
    const refused = [
      () => inspector.prefixedHealthWindows([{ code: '', prefix: '' }], 300, dayFrom),
      () => inspector.prefixedHealthWindows([{ code: 'x'.repeat(65), prefix: '' }], 300, dayFrom),
      () => inspector.prefixedHealthWindows([{ code: 'a', prefix: 7 as unknown as string }], 300, dayFrom),
      () => inspector.prefixedHealthWindows([{ code: 'a', prefix: 'nul\u0000' }], 300, dayFrom),
      () => inspector.prefixedHealthWindows([null as unknown as { code: string; prefix: string }], 300, dayFrom),
      () => inspector.prefixedHealthWindows('a' as unknown as [], 300, dayFrom),
      () =>
        inspector.prefixedHealthWindows(
          Array.from({ length: 10_001 }, () => ({ code: 'a', prefix: '' })),
          300,
          dayFrom,
        ),
      () => inspector.prefixedHealthWindows([{ code: 'a', prefix: '' }], 0, dayFrom),
      () => inspector.prefixedHealthWindows([{ code: 'a', prefix: '' }], 300, new Date(Number.NaN)),
    ];
    for (const call of refused) await expect(call()).rejects.toBeInstanceOf(InvalidJobQueryOptionsError);
    await expect(inspector.prefixedHealthWindows([], 300, dayFrom)).resolves.toEqual([]);
  });
});
