import { DeclarationError, DynamicSchedules } from '../../../src/features';
import { JobSchedulerDashboardModule, InvalidDashboardOptionsError } from '../../../src/features/dashboard';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';
import { call, csrfFrom, type DashboardApp, OPERATOR, READER, seedRuns, startDashboardApp } from './dashboard-app';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

const HOUR = 3_600_000;
const hourAgo = (hours: number): string => new Date(Math.floor(Date.now() / HOUR) * HOUR - hours * HOUR).toISOString();

describe('JobSchedulerDashboardModule.forRoot', () => {
  it('has no open default: it refuses to start without authorize', () => {
    expect(() => JobSchedulerDashboardModule.forRoot({ path: '/jobs' })).toThrow(InvalidDashboardOptionsError);
    expect(() => JobSchedulerDashboardModule.forRoot({ path: '/jobs' })).toThrow(/no open default/);
    expect(() => JobSchedulerDashboardModule.forRoot({ authorize: 'yes' as never })).toThrow(/authorize must be a function/);
    expect(() => JobSchedulerDashboardModule.forRoot({ dangerouslyAllowEveryone: true as never })).toThrow(/no open default/);
    expect(() => JobSchedulerDashboardModule.forRoot({ path: 'jobs', authorize: () => 'x' })).toThrow(/path must start with/);
    expect(JobSchedulerDashboardModule.forRoot({ dangerouslyAllowEveryone: 'local-development' }).controllers).toHaveLength(1);
  });

  it('refuses the opt-out when NODE_ENV is production', () => {
    const previous = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      expect(() => JobSchedulerDashboardModule.forRoot({ dangerouslyAllowEveryone: 'local-development' })).toThrow(/refused when NODE_ENV is 'production'/);
    } finally {
      process.env.NODE_ENV = previous;
    }
  });
});

describe.each([
  { adapter: 'express' as const, globalPrefix: undefined },
  { adapter: 'express' as const, globalPrefix: 'api/v1' },
  { adapter: 'fastify' as const, globalPrefix: 'admin' },
])('the dashboard API under $adapter (global prefix: $globalPrefix)', ({ adapter, globalPrefix }) => {
  let app: DashboardApp;
  let seeded: { id: string; ownerToken: string; fencingToken: string }[];
  const root = `${globalPrefix ? `/${globalPrefix}` : ''}/ops/jobs`;
  const responses: string[] = [];
  const get = async (path: string, authorization = READER) => {
    const response = await call(app, `${root}${path}`, { headers: { authorization } });
    responses.push(response.text);
    return response;
  };

  beforeAll(async () => {
    await database.sql('DELETE FROM "job-scheduler"');
    await database.sql('DELETE FROM "job-scheduler-pause"');
    seeded = await seedRuns(database, [
      { code: 'reports.hourly-digest', runKey: hourAgo(1), status: 'SUCCESS' },
      {
        code: 'reports.hourly-digest',
        runKey: hourAgo(2),
        status: 'FAIL',
        data: { error: { name: 'Error', message: 'ledger <locked> & "busy"' }, handlerMs: 1500 },
      },
      { code: 'reports.hourly-digest', runKey: hourAgo(3), status: 'FAIL', data: { outcome: 'missed', missed: 1 } },
      { code: 'reports.hourly-digest', runKey: hourAgo(4), status: 'SUCCESS', attempts: 2 },
      // hours 5 and 6: nothing recorded (a gap)
      { code: 'reports.hourly-digest', runKey: hourAgo(7), status: 'SUCCESS' },
      { code: 'billing.quarter-hour', runKey: hourAgo(0), status: 'RUNNING', heartbeatAgoMs: 10 * 60_000, leaseMs: 60_000 },
    ]);
    app = await startDashboardApp(database, { adapter, globalPrefix, path: '/ops/jobs', start: false });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('refuses requests without credentials (401) and actions by a reader (403), with no data', async () => {
    for (const path of [
      '',
      '/assets/dashboard.js',
      '/api/jobs',
      '/api/runs',
      `/api/runs/${seeded[0].id}`,
      '/api/leases/expired',
      '/api/jobs/reports.hourly-digest/timeline',
    ]) {
      const response = await call(app, `${root}${path}`);
      expect([path, response.status]).toEqual([path, 401]);
      expect(response.text).not.toContain('hourly-digest');
      expect(response.text).not.toContain(seeded[0].id);
    }
    const headers = await csrfFrom(app, root, READER);
    const response = await call(app, `${root}/api/jobs/reports.hourly-digest/run-now`, { method: 'POST', headers });
    expect(response.status).toBe(403);
    expect(app.actions).toEqual([]);
  });

  it('serves the page with a strict CSP, no inline script, and its assets', async () => {
    const page = await get('');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('set-cookie')).toMatch(new RegExp(`^sdcorejs-dashboard-csrf=[A-Za-z0-9_-]{43}; Path=${root}; HttpOnly; SameSite=Strict`));
    expect(page.text).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(page.text).toContain(`src="${root}/assets/dashboard.js"`);
    const script = await get('/assets/dashboard.js');
    expect([script.status, script.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
    const style = await get('/assets/dashboard.css');
    expect([style.status, style.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);
  });

  it('lists the declared jobs with schedule, words, time zone, next due instants and health', async () => {
    const { status, json } = await get('/api/jobs');
    expect(status).toBe(200);
    const jobs = (json as { jobs: { name: string; schedule: { words: string; timeZone: string | null }; nextDue: string[]; health: string }[] }).jobs;
    expect(jobs.map((job) => job.name).sort()).toEqual(['billing.every-second', 'billing.quarter-hour', 'reports.hourly-digest']);
    const hourly = jobs.find((job) => job.name === 'reports.hourly-digest');
    // 2 of its last 5 occurrences failed, none in a row since: degraded, not failing (and not ok).
    expect(hourly).toMatchObject({
      schedule: { words: 'every hour at minute 0 (Europe/Paris)', timeZone: 'Europe/Paris' },
      health: 'degraded',
      window: {
        last10: { finished: 5, succeeded: 3 },
        last24h: { finished: 5, succeeded: 3 },
        consecutiveFailures: 0,
        lastError: { at: hourAgo(2), message: 'ledger <locked> & "busy"' },
      },
    });
    const durations = (hourly as unknown as { window: { durationMs: { p50: number; p95: number; recent: number[] } } }).window.durationMs;
    // Each seeded run was claimed a minute before it finished; the failed one recorded its
    // handler's run time (handlerMs 1,500), which is its duration (oldest first: it is the 4th).
    expect(durations).toEqual({ p50: 60_000, p95: 60_000, recent: [60_000, 60_000, 60_000, 1_500, 60_000] });
    expect(hourly?.nextDue).toHaveLength(3);
    expect(jobs.find((job) => job.name === 'billing.every-second')?.schedule).toMatchObject({ words: 'every second', timeZone: null });
  });

  it('draws one mark per recorded occurrence, coloured by outcome, and the gap', async () => {
    const { status, json } = await get('/api/jobs/reports.hourly-digest/timeline?span=24h');
    expect(status).toBe(200);
    const timeline = json as { marks: { at: string; outcome: string }[]; gaps: { from: string; to: string; occurrences: number }[] };
    expect(timeline.marks.map((mark) => [mark.at, mark.outcome])).toEqual([
      [hourAgo(7), 'succeeded'],
      [hourAgo(4), 'taken-over'],
      [hourAgo(3), 'missed'],
      [hourAgo(2), 'failed'],
      [hourAgo(1), 'succeeded'],
    ]);
    expect(timeline.gaps).toContainEqual({ from: hourAgo(6), to: hourAgo(4), occurrences: 2 });
    expect((await get('/api/jobs/reports.hourly-digest/timeline?span=1y')).status).toBe(400);
    expect((await get('/api/jobs/nobody.here/timeline')).status).toBe(404);
  });

  it('claims no gap before the first known occurrence (a job deployed within the span)', async () => {
    // billing.quarter-hour's first (and only) occurrence is due at the start of this hour.
    const { status, json } = await get('/api/jobs/billing.quarter-hour/timeline?span=24h');
    expect(status).toBe(200);
    const timeline = json as { knownSince: string | null; gaps: { from: string; occurrences: number }[]; marks: { at: string; outcome: string }[] };
    expect(timeline.knownSince).toBe(hourAgo(0));
    expect(timeline.marks.map((mark) => [mark.at, mark.outcome])).toEqual([[hourAgo(0), 'running']]);
    for (const gap of timeline.gaps) expect(gap.from >= hourAgo(0)).toBe(true);
    expect(timeline.gaps.reduce((sum, gap) => sum + gap.occurrences, 0)).toBeLessThanOrEqual(4);
    for (const span of ['1h', '6h', '24h', '7d']) expect((await get(`/api/jobs/billing.quarter-hour/timeline?span=${span}`)).status).toBe(200);
  });

  it('keeps the newest rows of a dense job, says where it cuts, and counts per bucket without false gaps', async () => {
    // billing.every-second ran every second of the last 4 hours, always succeeded: 14,400 rows, more than a timeline reads.
    const end = Math.floor(Date.now() / 1000) * 1000;
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, name, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts,
         "createdAt", "modifiedAt", "startedAt", "finishedAt")
       SELECT 'dense:' || i, 'billing.every-second', 'billing.every-second', 'SCHEDULE', 'SUCCESS', gen_random_uuid(),
         to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 60000, 'seed-node:1', nextval('"job-scheduler_fencingToken_seq"'), 1,
         k.at, k.at, k.at, k.at
       FROM generate_series(0, 14399) AS i CROSS JOIN LATERAL (SELECT to_timestamp($1::bigint / 1000.0) - i * interval '1 second' AS at) AS k`,
      [end],
    );
    try {
      const { status, json } = await get('/api/jobs/billing.every-second/timeline?span=24h');
      expect(status).toBe(200);
      const timeline = json as {
        truncated: boolean;
        shownFrom: string;
        to: string;
        gaps: unknown[];
        bucketMs: number;
        buckets: { from: string; succeeded: number; notRun: number }[];
      };
      expect(timeline.truncated).toBe(true);
      // The newest 12,000 seconds are shown (the oldest second read may be partial and is left out).
      const shownFrom = Date.parse(timeline.shownFrom);
      expect(shownFrom).toBeGreaterThanOrEqual(end - 12_000 * 1000);
      expect(shownFrom).toBeLessThanOrEqual(end - 11_998 * 1000);
      expect(timeline.gaps).toEqual([]);
      expect(timeline.bucketMs).toBe(600_000);
      for (const bucket of timeline.buckets) expect(Date.parse(bucket.from) % 600_000).toBe(0);
      const sum = (key: 'succeeded' | 'notRun') => timeline.buckets.reduce((total, bucket) => total + bucket[key], 0);
      expect(sum('succeeded')).toBeGreaterThanOrEqual(11_998);
      expect(sum('succeeded')).toBeLessThanOrEqual(12_000);
      // Not run: only the seconds between the seed and the request (the app's timers are off).
      expect(sum('notRun')).toBeLessThanOrEqual(Math.ceil((Date.parse(timeline.to) - end) / 1000) + 1);
    } finally {
      await database.sql(`DELETE FROM "job-scheduler" WHERE "lockKey" LIKE 'dense:%'`);
    }
  });

  it('pages through the runs with filters and a keyset cursor, and shows a run in detail', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; json: unknown } = await get(
        `/api/runs?code=reports.hourly-digest&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.status).toBe(200);
      const body = page.json as { runs: { id: string }[]; nextCursor: string | null };
      seen.push(...body.runs.map((run) => run.id));
      cursor = body.nextCursor;
    } while (cursor);
    expect(seen.sort()).toEqual(
      seeded
        .slice(0, 5)
        .map((run) => run.id)
        .sort(),
    );
    const failed = await get('/api/runs?status=FAIL');
    expect((failed.json as { runs: unknown[] }).runs).toHaveLength(2);
    expect((await get('/api/runs?status=LOST')).status).toBe(400);
    expect((await get('/api/runs?from=yesterday')).status).toBe(400);
    const detail = await get(`/api/runs/${seeded[1].id}`);
    expect(detail.json).toMatchObject({
      id: seeded[1].id,
      status: 'FAIL',
      fencingToken: Number(seeded[1].fencingToken),
      ownerId: 'seed-node:1',
      attempts: 1,
      data: { error: { message: 'ledger <locked> & "busy"' } },
    });
    expect((await get('/api/runs/not-a-uuid')).status).toBe(400);
    expect((await get('/api/runs/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it("shows a failed run's error as its error, the due instant, the claim and the handler's start apart", async () => {
    const detail = await get(`/api/runs/${seeded[1].id}`);
    expect(detail.json).toMatchObject({
      error: { name: 'Error', message: 'ledger <locked> & "busy"' },
      errorMessage: 'ledger <locked> & "busy"',
      lastError: null,
      dueAt: hourAgo(2),
      outcome: null,
    });
    // Started: the handler's start, finishedAt - data.handlerMs (the claim is seeded a minute before the finish).
    const body = detail.json as { claimedAt: string; startedAt: string; finishedAt: string };
    expect(Date.parse(body.finishedAt) - Date.parse(body.startedAt)).toBe(1500);
    expect(Date.parse(body.startedAt) - Date.parse(body.claimedAt)).toBe(58_500);
    const missed = await get(`/api/runs/${seeded[2].id}`);
    expect(missed.json).toMatchObject({ outcome: 'missed', dueAt: hourAgo(3), error: { outcome: 'missed', missed: 1 } });
    // A run that recorded no handlerMs: its handler's start is unknown (null), its claim still shown.
    const succeeded = await get(`/api/runs/${seeded[0].id}`);
    expect(succeeded.json).toMatchObject({ error: null, errorMessage: null, outcome: null, dueAt: hourAgo(1), startedAt: null, claimedAt: expect.any(String) });
    const summary = ((await get('/api/runs?code=reports.hourly-digest')).json as { runs: { id: string; startedAt: string | null }[] }).runs;
    expect(summary.find((run) => run.id === seeded[1].id)?.startedAt).toBe(body.startedAt);
  });

  it('searches the runs of a job by the start of their run key (and refuses it without a job, before any SQL)', async () => {
    const prefix = hourAgo(2).slice(0, 13);
    const found = await get(`/api/runs?code=reports.hourly-digest&runKey=${encodeURIComponent(prefix)}`);
    expect(found.status).toBe(200);
    expect((found.json as { runs: { id: string }[] }).runs.map((run) => run.id)).toEqual([seeded[1].id]);
    const none = await get(`/api/runs?code=reports.hourly-digest&runKey=${encodeURIComponent('run-now ')}`);
    expect((none.json as { runs: unknown[] }).runs).toEqual([]);
    const refused = await get(`/api/runs?runKey=${encodeURIComponent(prefix)}`);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('runKey (a run key search) needs a job');
  });

  it('lists the leases running past their lease, and releases one only with the fencing token the operator saw', async () => {
    const { json } = await get('/api/leases/expired');
    const [lease] = (json as { leases: { id: string; ownerId: string; heartbeatAgeMs: number; fencingToken: number }[] }).leases;
    expect(lease).toMatchObject({ id: seeded[5].id, ownerId: 'seed-node:1', fencingToken: Number(seeded[5].fencingToken) });
    expect(lease.heartbeatAgeMs).toBeGreaterThanOrEqual(9 * 60_000);
    const headers = await csrfFrom(app, root);
    // The lease changes meanwhile: another holder reclaims it with a new fencing token.
    await database.sql(`UPDATE "job-scheduler" SET "fencingToken" = nextval('"job-scheduler_fencingToken_seq"') WHERE id = $1`, [lease.id]);
    const refused = await call(app, `${root}/api/runs/${lease.id}/release?fencingToken=${lease.fencingToken}`, { method: 'POST', headers });
    expect(refused.status).toBe(409);
    const [current] = await database.sql<{ fencingToken: string; status: string }>(
      `SELECT "fencingToken"::text AS "fencingToken", status FROM "job-scheduler" WHERE id = $1`,
      [lease.id],
    );
    expect(current.status).toBe('RUNNING');
    const released = await call(app, `${root}/api/runs/${lease.id}/release?fencingToken=${current.fencingToken}`, { method: 'POST', headers });
    expect([released.status, released.json]).toEqual([200, { applied: true }]);
    const [after] = await database.sql<{ status: string; ownerToken: string | null }>(`SELECT status, "ownerToken" FROM "job-scheduler" WHERE id = $1`, [
      lease.id,
    ]);
    expect(after).toEqual({ status: 'FAIL', ownerToken: null });
    expect(app.actions.map((entry) => [entry.action, entry.actor, entry.target, entry.applied])).toEqual([
      ['release', 'olga the operator', lease.id, false],
      ['release', 'olga the operator', lease.id, true],
    ]);
  });

  it('needs the CSRF token for actions; run now, pause and resume are logged with who did them', async () => {
    const headers = await csrfFrom(app, root);
    const withoutToken = await call(app, `${root}/api/jobs/billing.quarter-hour/run-now`, {
      method: 'POST',
      headers: { authorization: OPERATOR, cookie: headers.cookie },
    });
    expect(withoutToken.status).toBe(403);
    const wrongToken = await call(app, `${root}/api/jobs/billing.quarter-hour/run-now`, {
      method: 'POST',
      headers: { ...headers, 'x-dashboard-csrf': 'x'.repeat(43) },
    });
    expect(wrongToken.status).toBe(403);
    const ran = await call(app, `${root}/api/jobs/billing.quarter-hour/run-now`, { method: 'POST', headers });
    expect([ran.status, ran.json]).toEqual([200, { finished: true, outcomes: ['succeeded'] }]);
    const runs = await get('/api/runs?code=billing.quarter-hour&status=SUCCESS');
    expect((runs.json as { runs: { runKey: string }[] }).runs[0].runKey).toMatch(/^run-now /);

    expect((await call(app, `${root}/api/jobs/billing.quarter-hour/pause`, { method: 'POST', headers })).json).toEqual({ applied: true });
    expect((await call(app, `${root}/api/jobs/billing.quarter-hour/pause`, { method: 'POST', headers })).json).toEqual({ applied: false });
    const paused = ((await get('/api/jobs')).json as { jobs: { name: string; health: string; paused: { by: string } | null }[] }).jobs.find(
      (job) => job.name === 'billing.quarter-hour',
    );
    expect(paused).toMatchObject({ health: 'disabled', paused: { by: 'olga the operator' } });
    expect(app.scheduled.isEnabled('billing.quarter-hour')).toBe(false);
    expect((await call(app, `${root}/api/jobs/billing.quarter-hour/resume`, { method: 'POST', headers })).json).toEqual({ applied: true });
    expect(app.scheduled.isEnabled('billing.quarter-hour')).toBe(true);
    expect((await call(app, `${root}/api/jobs/nobody.here/pause`, { method: 'POST', headers })).status).toBe(404);
    expect(app.actions.slice(-4).map((entry) => [entry.action, entry.actor, entry.target, entry.applied])).toEqual([
      ['run-now', 'olga the operator', 'billing.quarter-hour', true],
      ['pause', 'olga the operator', 'billing.quarter-hour', true],
      ['pause', 'olga the operator', 'billing.quarter-hour', false],
      ['resume', 'olga the operator', 'billing.quarter-hour', true],
    ]);
  });

  it('never shows an owner token in any page or API response', async () => {
    await get('/api/runs?limit=200');
    for (const run of seeded) await get(`/api/runs/${run.id}`);
    const tokens = [
      ...seeded.map((run) => run.ownerToken),
      ...(await database.sql<{ ownerToken: string }>('SELECT "ownerToken"::text AS "ownerToken" FROM "job-scheduler" WHERE "ownerToken" IS NOT NULL')).map(
        (row) => row.ownerToken,
      ),
    ];
    expect(responses.length).toBeGreaterThan(20);
    for (const token of tokens) for (const text of responses) expect(text).not.toContain(token);
  });
});

describe('dynamic schedules in the dashboard', () => {
  let app: DashboardApp;
  afterAll(async () => {
    await app?.close();
  });

  it('lists them, draws their timeline, and runs one now', async () => {
    await database.sql('DELETE FROM "job-scheduler"');
    app = await startDashboardApp(database, { dynamic: true, start: false });
    const schedules = app.app.get(DynamicSchedules);
    await schedules.upsert({ id: 'tenant-42/weekly', handler: 'reports.tenant-export', cron: '0 3 * * 1', timeZone: 'America/New_York', tenantId: '42' });
    const day = (days: number) => new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 - days * 86_400_000).toISOString();
    await seedRuns(database, [
      { code: 'reports.tenant-export', runKey: `schedule=tenant-42%2Fweekly ${day(2)}`, status: 'SUCCESS' },
      { code: 'reports.tenant-export', runKey: `schedule=tenant-42%2Fweekly ${day(3)}`, status: 'FAIL', data: { error: { message: 'export refused' } } },
      // Another schedule's failure, and the handler's own (as a declared job's key): not this schedule's.
      { code: 'reports.tenant-export', runKey: `schedule=other ${day(1)}`, status: 'FAIL' },
      { code: 'reports.tenant-export', runKey: day(1), status: 'FAIL' },
    ]);
    const listed = await call(app, '/jobs/api/schedules', { headers: { authorization: READER } });
    expect(listed.json).toMatchObject({
      schedules: [
        {
          id: 'tenant-42/weekly',
          handler: 'reports.tenant-export',
          enabled: true,
          tenantId: '42',
          schedule: { words: 'Monday at 03:00 (America/New_York)' },
          // Its last success and outcome, and its health by its own window (just made: not late).
          lastSuccessAt: day(2),
          lastOutcome: 'succeeded',
          health: 'degraded',
          window: {
            last10: { finished: 2, succeeded: 1 },
            last24h: { finished: 0, succeeded: 0 },
            consecutiveFailures: 0,
            lastError: { at: day(3), message: 'export refused' },
            durationMs: null,
          },
        },
      ],
      nextCursor: null,
    });
    const timeline = await call(app, `/jobs/api/schedules/${encodeURIComponent('tenant-42/weekly')}/timeline?span=7d`, { headers: { authorization: READER } });
    expect((timeline.json as { marks: { at: string; outcome: string }[] }).marks.map((mark) => [mark.at, mark.outcome])).toEqual([
      [day(3), 'failed'],
      [day(2), 'succeeded'],
    ]);
    expect((await call(app, '/jobs/api/schedules/nobody/timeline', { headers: { authorization: READER } })).status).toBe(404);
    const headers = await csrfFrom(app, '/jobs');
    const ran = await call(app, `/jobs/api/schedules/${encodeURIComponent('tenant-42/weekly')}/run-now`, { method: 'POST', headers });
    expect([ran.status, ran.json]).toEqual([200, { finished: true, outcomes: ['succeeded'] }]);
    expect((await call(app, '/jobs/api/schedules/nobody/run-now', { method: 'POST', headers })).status).toBe(404);

    // Paused and resumed from the dashboard: persisted in the schedule's row (every instance follows it).
    const pausePath = `/jobs/api/schedules/${encodeURIComponent('tenant-42/weekly')}/pause`;
    expect((await call(app, pausePath, { method: 'POST', headers: { authorization: READER } })).status).toBe(403);
    const paused = await call(app, pausePath, { method: 'POST', headers });
    expect([paused.status, paused.json]).toEqual([200, { applied: true }]);
    expect(await schedules.get('tenant-42/weekly')).toMatchObject({ enabled: false, cron: '0 3 * * 1', timeZone: 'America/New_York', tenantId: '42' });
    expect((await call(app, '/jobs/api/schedules', { headers: { authorization: READER } })).json).toMatchObject({
      schedules: [{ id: 'tenant-42/weekly', enabled: false, nextDue: [], lastOutcome: 'succeeded', health: 'disabled' }],
    });
    const resumed = await call(app, `/jobs/api/schedules/${encodeURIComponent('tenant-42/weekly')}/resume`, { method: 'POST', headers });
    expect([resumed.status, resumed.json]).toEqual([200, { applied: true }]);
    expect(await schedules.get('tenant-42/weekly')).toMatchObject({ enabled: true });
    expect((await call(app, '/jobs/api/schedules/nobody/pause', { method: 'POST', headers })).status).toBe(404);
    expect(app.actions.map((entry) => [entry.action, entry.target])).toEqual([
      ['run-now', 'schedule tenant-42/weekly'],
      ['pause', 'schedule tenant-42/weekly'],
      ['resume', 'schedule tenant-42/weekly'],
    ]);
  });
});

describe('dynamic schedules: search and keyset paging', () => {
  let app: DashboardApp;
  afterAll(async () => {
    await app?.close();
  });

  it('finds a schedule by the start of its id, handler or tenant, and pages by id without skipping or repeating', async () => {
    await database.sql('DELETE FROM "job-schedule"');
    app = await startDashboardApp(database, { dynamic: true, start: false });
    const schedules = app.app.get(DynamicSchedules);
    for (let index = 0; index < 250; index++) {
      const id = `fleet/${String(index).padStart(4, '0')}`;
      await schedules.upsert({ id, handler: 'reports.tenant-export', every: '1h', tenantId: `t${index % 7}` });
    }
    const list = async (query: string) => {
      const response = await call(app, `/jobs/api/schedules${query}`, { headers: { authorization: READER } });
      expect(response.status).toBe(200);
      return response.json as { schedules: { id: string; tenantId: string }[]; nextCursor: string | null };
    };
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await list(cursor ? `?after=${encodeURIComponent(cursor)}` : '');
      seen.push(...page.schedules.map((schedule) => schedule.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toHaveLength(250);
    expect(new Set(seen).size).toBe(250);
    expect([...seen].sort()).toEqual(seen);
    const found = await list(`?q=${encodeURIComponent('fleet/012')}`);
    expect(found.schedules.map((schedule) => schedule.id)).toEqual(Array.from({ length: 10 }, (_, index) => `fleet/012${index}`));
    expect(found.nextCursor).toBeNull();
    const tenant = await list(`?q=${encodeURIComponent('fleet/01')}&tenant=t3`);
    expect(tenant.schedules.every((schedule) => schedule.id.startsWith('fleet/01') && schedule.tenantId === 't3')).toBe(true);
    expect(tenant.schedules.length).toBeGreaterThan(0);
    expect((await list('?handler=nobody.here')).schedules).toEqual([]);
    const refused = await call(app, `/jobs/api/schedules?q=${'x'.repeat(513)}`, { headers: { authorization: READER } });
    expect(refused.status).toBe(400);
  });
});

describe('@RunOnce methods in the dashboard', () => {
  let app: DashboardApp;
  afterAll(async () => {
    await app?.close();
  });

  it('lists them with their schedule, health and timeline, and says they have no run now or pause', async () => {
    await database.sql('DELETE FROM "job-scheduler"');
    app = await startDashboardApp(database, { runOnce: true, start: false });
    const day = (days: number) => new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 - days * 86_400_000 + 3 * 3_600_000).toISOString();
    await seedRuns(database, [
      { code: 'reports.nightly-export', runKey: day(1), status: 'SUCCESS' },
      { code: 'reports.nightly-export', runKey: day(2), status: 'FAIL', data: { error: { name: 'Error', message: 'bucket gone' } } },
    ]);
    const listed = await call(app, '/jobs/api/jobs', { headers: { authorization: READER } });
    const job = (listed.json as { jobs: { name: string }[] }).jobs.find((candidate) => candidate.name === 'reports.nightly-export');
    expect(job).toMatchObject({
      kind: 'run-once',
      method: 'NightlyExport.export',
      lastSuccessAt: day(1),
      health: 'degraded',
      window: { last10: { finished: 2, succeeded: 1 }, lastError: { at: day(2), message: 'bucket gone' } },
      actions: { runNow: false, pause: false, why: expect.stringContaining('@RunOnce') },
    });
    expect((job as unknown as { nextDue: string[] }).nextDue).toHaveLength(3);
    const timeline = await call(app, '/jobs/api/jobs/reports.nightly-export/timeline?span=7d', { headers: { authorization: READER } });
    expect(timeline.status).toBe(200);
    expect((timeline.json as { marks: { at: string; outcome: string }[] }).marks.map((mark) => [mark.at, mark.outcome])).toEqual([
      [day(2), 'failed'],
      [day(1), 'succeeded'],
    ]);
    const headers = await csrfFrom(app, '/jobs');
    expect((await call(app, '/jobs/api/jobs/reports.nightly-export/run-now', { method: 'POST', headers })).status).toBe(404);
  });
});

describe('an interval past the schedule horizon', () => {
  let app: DashboardApp;
  afterAll(async () => {
    await app?.close();
  });

  it('is refused at upsert, and a row stored with one earlier leaves the list answering (not 500)', async () => {
    await database.sql('DELETE FROM "job-schedule"');
    app = await startDashboardApp(database, { dynamic: true, start: false });
    const schedules = app.app.get(DynamicSchedules);
    await schedules.upsert({ id: 'tenant-7/daily', handler: 'reports.tenant-export', every: '1d' });
    const forever = schedules.upsert({ id: 'tenant-7/forever', handler: 'reports.tenant-export', every: Number.MAX_SAFE_INTEGER });
    await expect(forever).rejects.toThrow(DeclarationError);
    await expect(forever).rejects.toThrow(/"every" must be at most 2928d \(8 years, 252979200000 ms/);
    // A row an earlier release stored, with an interval no date can follow (new Date(next) is invalid).
    await schedules.upsert({ id: 'tenant-7/legacy', handler: 'reports.tenant-export', every: '1h' });
    await database.sql(`UPDATE "job-schedule" SET "everyMs" = $1 WHERE id = 'tenant-7/legacy'`, [String(Number.MAX_SAFE_INTEGER)]);

    const listed = await call(app, '/jobs/api/schedules', { headers: { authorization: READER } });
    expect(listed.status).toBe(200);
    const [daily, legacy] = (listed.json as { schedules: { id: string; nextDue: string[]; schedule: { words: string } }[] }).schedules;
    expect(daily).toMatchObject({ id: 'tenant-7/daily', schedule: { words: 'every day' } });
    expect(daily.nextDue).toHaveLength(3);
    expect(legacy).toMatchObject({ id: 'tenant-7/legacy', nextDue: [], schedule: { words: expect.stringMatching(/^not run: "every" must be at most 2928d/) } });
  });
});
