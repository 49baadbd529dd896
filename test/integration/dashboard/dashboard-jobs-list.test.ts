import { createTestDatabase, type TestDatabase } from '../../support/test-database';
import { call, csrfFrom, type DashboardApp, OPERATOR, READER, seedRuns, startDashboardApp } from './dashboard-app';

// The jobs list is a page (declared jobs, then @RunOnce methods, each by name; a keyset cursor; a
// search on the name), and carries the failing jobs among ALL jobs, whichever page is shown.

let database: TestDatabase;
let app: DashboardApp;
/** The due instant of the quarter hour `back` quarters before the test started. */
const START = Math.floor(Date.now() / 900_000) * 900_000;
const quarter = (back: number): string => new Date(START - back * 900_000).toISOString();
beforeAll(async () => {
  database = await createTestDatabase();
  await seedRuns(database, [
    // billing.quarter-hour failed its last two occurrences: failing.
    { code: 'billing.quarter-hour', runKey: quarter(1), status: 'FAIL', data: { error: { name: 'Error', message: 'card network down' } } },
    { code: 'billing.quarter-hour', runKey: quarter(2), status: 'FAIL', data: { error: { name: 'Error', message: 'card network down' } } },
    { code: 'billing.quarter-hour', runKey: quarter(3), status: 'SUCCESS' },
    // reports.hourly-digest: one failure, then a success: degraded.
    { code: 'reports.hourly-digest', runKey: quarter(4), status: 'SUCCESS' },
    { code: 'reports.hourly-digest', runKey: quarter(8), status: 'FAIL', data: { error: { name: 'Error', message: 'late ledger' } } },
    // The @RunOnce method failed three of its last ten (not in a row): failing too.
    ...[1, 2, 3, 4, 5, 6, 7].map((day) => ({
      code: 'reports.nightly-export',
      runKey: new Date(Date.UTC(2026, 10, day, 2)).toISOString(),
      status: day % 3 === 0 || day === 1 ? ('FAIL' as const) : ('SUCCESS' as const),
    })),
  ]);
  app = await startDashboardApp(database, { start: false, runOnce: true });
});
afterAll(async () => {
  await app?.close();
  await database.drop();
});

interface ListedJob {
  name: string;
  kind: string;
  lastOutcome: string | null;
  health: string;
  window: { consecutiveFailures: number; lastError: { at: string; message: string } | null };
}
interface FailingJob {
  name: string;
  kind: string;
  window: { last10: { finished: number; succeeded: number }; consecutiveFailures: number; lastError: { at: string; message: string } | null };
}
interface JobsAnswer {
  jobs: ListedJob[];
  nextCursor: string | null;
  total: number;
  pageSize: number;
  failing: FailingJob[];
  failingTotal: number;
}

const jobsAt = async (query: string): Promise<JobsAnswer> => {
  const response = await call(app, `/jobs/api/jobs${query}`, { headers: { authorization: READER } });
  expect(response.status).toBe(200);
  return response.json as JobsAnswer;
};

describe('the jobs list', () => {
  it('pages declared jobs, then @RunOnce methods, each by name, with a cursor that walks them all once', async () => {
    const names: string[] = [];
    let answer = await jobsAt('?limit=1');
    expect([answer.total, answer.pageSize]).toEqual([4, 1]);
    for (let pages = 1; ; pages++) {
      expect(answer.jobs).toHaveLength(1);
      names.push(`${answer.jobs[0].kind} ${answer.jobs[0].name}`);
      if (!answer.nextCursor) break;
      expect(pages).toBeLessThan(4);
      answer = await jobsAt(`?limit=1&after=${encodeURIComponent(answer.nextCursor)}`);
    }
    expect(names).toEqual([
      'declared billing.every-second',
      'declared billing.quarter-hour',
      'declared reports.hourly-digest',
      'run-once reports.nightly-export',
    ]);
    // Without a limit, one page of up to 50 holds them all, each with how its newest finished occurrence ended.
    const all = await jobsAt('');
    expect([all.jobs.length, all.nextCursor, all.total, all.pageSize]).toEqual([4, null, 4, 50]);
    expect(all.jobs.map((job) => [job.name, job.lastOutcome])).toEqual([
      ['billing.every-second', null],
      ['billing.quarter-hour', 'failed'],
      ['reports.hourly-digest', 'succeeded'],
      ['reports.nightly-export', 'succeeded'],
    ]);
  });

  it('searches a part of the name, in any case', async () => {
    const answer = await jobsAt('?q=REPORTS');
    expect(answer.jobs.map((job) => job.name)).toEqual(['reports.hourly-digest', 'reports.nightly-export']);
    expect(answer.total).toBe(2);
    expect((await jobsAt('?q=nothing-like-it')).jobs).toEqual([]);
  });

  it('lists the failing jobs among all of them, whatever the page or search', async () => {
    const answer = await jobsAt('?q=hourly');
    expect(answer.jobs.map((job) => [job.name, job.health])).toEqual([['reports.hourly-digest', 'degraded']]);
    expect(answer.failingTotal).toBe(2);
    expect(answer.failing.map((job) => [job.name, job.kind])).toEqual([
      ['billing.quarter-hour', 'declared'],
      ['reports.nightly-export', 'run-once'],
    ]);
    // What its 10 newest finished occurrences say: successes, failures in a row, the newest failure.
    expect(answer.failing[0].window).toEqual({
      last10: { finished: 3, succeeded: 1 },
      consecutiveFailures: 2,
      lastError: { at: quarter(1), message: 'card network down' },
    });
    expect(answer.failing[1].window).toMatchObject({ last10: { finished: 7, succeeded: 4 }, consecutiveFailures: 0 });
  });

  it('takes a paused job off the failing list (it is disabled), and puts it back on resume', async () => {
    const headers = { authorization: OPERATOR, ...(await csrfFrom(app, '/jobs')) };
    expect((await call(app, '/jobs/api/jobs/billing.quarter-hour/pause', { method: 'POST', headers })).status).toBe(200);
    try {
      const paused = await jobsAt('?q=quarter');
      expect(paused.jobs.map((job) => job.health)).toEqual(['disabled']);
      expect(paused.failing.map((job) => job.name)).toEqual(['reports.nightly-export']);
    } finally {
      expect((await call(app, '/jobs/api/jobs/billing.quarter-hour/resume', { method: 'POST', headers })).status).toBe(200);
    }
    expect((await jobsAt('')).failing.map((job) => job.name)).toEqual(['billing.quarter-hour', 'reports.nightly-export']);
  });

  it.each([
    ['limit 0', '?limit=0', /limit must be a whole number from 1 to 100/],
    ['limit 101', '?limit=101', /limit must be a whole number from 1 to 100/],
    ['limit 1.5', '?limit=1.5', /limit must be a whole number from 1 to 100/],
    ['q twice', '?q=a&q=b', /q must be given once, as text/],
    ['a cursor of 513 characters', `?after=${'x'.repeat(513)}`, /after must be at most 512 characters/],
  ])('refuses %s with 400 and says why', async (_label, query, message) => {
    const response = await call(app, `/jobs/api/jobs${query}`, { headers: { authorization: READER } });
    expect(response.status).toBe(400);
    expect((response.json as { message: string }).message).toMatch(message);
  });
});
