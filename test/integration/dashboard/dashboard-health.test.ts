import { JobRunsInspector } from '../../../src/features/job-scheduler/operations/job-runs.inspector';
import { HEALTH_DAY_MS, HEALTH_WINDOW_ROWS, healthWindowOf, lastSuccessOf, windowState } from '../../../src/features/dashboard/dashboard-health';
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
}

/** Rows as the scheduler leaves them: claimed (startedAt), finished `claimToFinishMs` later unless RUNNING. */
const seed = async (rows: readonly Seeded[]): Promise<void> => {
  await database.sql(
    `INSERT INTO "job-scheduler" ("lockKey", code, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts, data,
       "startedAt", "finishedAt", "createdAt", "modifiedAt")
     SELECT 'seed:' || r.code || ':' || r."runKey", r.code, 'SCHEDULE', r.status::"job-scheduler_status_enum", gen_random_uuid(), r."runKey", 60000, 'seed-node',
       nextval('"job-scheduler_fencingToken_seq"'), 1, r.data, now() - interval '1 hour',
       CASE WHEN r.status = 'RUNNING' THEN NULL ELSE now() - interval '1 hour' + r.ms * interval '1 millisecond' END, now(), now()
     FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::int[]) AS r(code, "runKey", status, data, ms)`,
    [
      rows.map((row) => row.code),
      rows.map((row) => row.runKey),
      rows.map((row) => row.status),
      rows.map((row) => (row.data === undefined ? null : JSON.stringify(row.data))),
      rows.map((row) => row.claimToFinishMs ?? 1_000),
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
