import { bucketSizeOf, buildTimeline, dueInstantsNewestFirst, type OccurrenceOutcome } from '../../../src/features/dashboard/dashboard-timeline';
import { windowState } from '../../../src/features/dashboard/dashboard-health';
import { fencingTokenOf, runFilterOf, timelineSpanOf } from '../../../src/features/dashboard/dashboard-query';
import { escapeHtml, renderDashboardPage } from '../../../src/features/dashboard/dashboard-assets';
import { checkCsrf, csrfCookie, csrfCookieOf, newCsrfToken } from '../../../src/features/dashboard/dashboard-access';
import { EVERYONE, InvalidDashboardOptionsError, resolveDashboardOptions } from '../../../src/features/dashboard/dashboard.options';
import { cronInWords, describeSchedule, intervalInWords, nextDueInstants } from '../../../src/features/dashboard/schedule-words';
import { InvalidJobQueryOptionsError } from '../../../src/features/job-scheduler/job-scheduler.errors';
import { CronSchedule, IntervalSchedule } from '../../../src/features/scheduling/schedule/due-schedule';

describe('schedules in words', () => {
  it.each([
    ['* * * * *', 'every minute'],
    ['*/5 * * * *', 'every 5 minutes'],
    ['7 * * * *', 'every hour at minute 7'],
    ['30 */6 * * *', 'every 6 hours at minute 30'],
    ['0 3 * * *', 'every day at 03:00'],
    ['15 9 * * 1-5', 'Monday to Friday at 09:15'],
    ['0 8 * * MON,WED', 'Monday, Wednesday at 08:00'],
    ['0 4 1 * *', 'on day 1 of every month at 04:00'],
    ['0 4 1 1 *', null],
    ['0-10 * * * *', null],
  ])('%s: %s', (expression, words) => {
    expect(cronInWords(expression)).toBe(words);
  });

  it('intervals in the largest whole unit', () => {
    expect([1_000, 60_000, 900_000, 3_600_000, 86_400_000, 1_500].map(intervalInWords)).toEqual([
      'every second',
      'every minute',
      'every 15 minutes',
      'every hour',
      'every day',
      'every 1500 milliseconds',
    ]);
  });

  it('describes a schedule and its next due instants', () => {
    expect(describeSchedule(new CronSchedule('0 3 * * *', 'Europe/Paris'))).toEqual({
      kind: 'cron',
      expression: '0 3 * * *',
      words: 'every day at 03:00 (Europe/Paris)',
      timeZone: 'Europe/Paris',
    });
    expect(describeSchedule(new IntervalSchedule(60_000))).toEqual({ kind: 'every', expression: '60000 ms', words: 'every minute', timeZone: null });
    expect(nextDueInstants(new IntervalSchedule(60_000), Date.parse('2026-01-01T00:00:30Z')).map((date) => date.toISOString())).toEqual([
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:02:00.000Z',
      '2026-01-01T00:03:00.000Z',
    ]);
  });
});

describe('the timeline', () => {
  const row = (runKey: string, outcome: OccurrenceOutcome, id = runKey) => ({ id, runKey, outcome });

  it('one mark per due instant (tenants together, the worst outcome shown), runNow runs apart, gaps merged', () => {
    const from = Date.parse('2026-01-01T00:00:00Z');
    const to = Date.parse('2026-01-01T00:10:00Z');
    const timeline = buildTimeline(
      [
        row('2026-01-01T00:09:00.000Z', 'succeeded'),
        row('2026-01-01T00:05:00.000Z tenant=b', 'failed', 'b'),
        row('2026-01-01T00:05:00.000Z tenant=a', 'succeeded', 'a'),
        row('2026-01-01T00:01:00.000Z', 'succeeded'),
        row('run-now 2026-01-01T00:03:30.000Z 7f0c6a2e-0000-4000-8000-000000000000', 'succeeded', 'now'),
      ],
      new IntervalSchedule(60_000),
      { from, to, readLimit: 100, knownSince: null },
    );
    expect(timeline.marks).toEqual([
      { at: '2026-01-01T00:01:00.000Z', outcome: 'succeeded', trigger: 'schedule', runId: '2026-01-01T00:01:00.000Z', runs: 1 },
      { at: '2026-01-01T00:03:30.000Z', outcome: 'succeeded', trigger: 'run-now', runId: 'now', runs: 1 },
      { at: '2026-01-01T00:05:00.000Z', outcome: 'failed', trigger: 'schedule', runId: 'b', runs: 2 },
      { at: '2026-01-01T00:09:00.000Z', outcome: 'succeeded', trigger: 'schedule', runId: '2026-01-01T00:09:00.000Z', runs: 1 },
    ]);
    expect(timeline.gaps).toEqual([
      { from: '2026-01-01T00:00:00.000Z', to: '2026-01-01T00:01:00.000Z', occurrences: 1 },
      { from: '2026-01-01T00:02:00.000Z', to: '2026-01-01T00:05:00.000Z', occurrences: 3 },
      { from: '2026-01-01T00:06:00.000Z', to: '2026-01-01T00:09:00.000Z', occurrences: 3 },
    ]);
    expect(timeline.truncated).toBe(false);
    expect(timeline.shownFrom).toBe(timeline.from);
    const tooMany = buildTimeline([], new IntervalSchedule(1_000), { from, to, readLimit: 100, knownSince: null, maxDue: 100, maxMarks: 1_000 });
    expect(tooMany.truncated).toBe(true);
    // The newest 100 due instants are shown, as one gap that ends at `to`.
    expect(tooMany.shownFrom).toBe('2026-01-01T00:08:20.000Z');
    expect(tooMany.gaps).toEqual([{ from: '2026-01-01T00:08:20.000Z', to: '2026-01-01T00:10:00.000Z', occurrences: 100 }]);
  });

  it('rows in any order give the timeline of the same rows newest first (tenants of an instant apart in the list still make one mark)', () => {
    const from = Date.parse('2026-01-01T00:00:00Z');
    const to = Date.parse('2026-01-01T00:10:00Z');
    const newestFirst = [
      row('2026-01-01T00:09:00.000Z', 'running'),
      row('2026-01-01T00:05:00.000Z tenant=c', 'succeeded', 'c'),
      row('2026-01-01T00:05:00.000Z tenant=b', 'missed', 'b'),
      row('2026-01-01T00:05:00.000Z tenant=a', 'failed', 'a'),
      row('2026-01-01T00:02:00.000Z', 'taken-over'),
    ];
    const bounds = { from, to, readLimit: 100, knownSince: null };
    const expected = buildTimeline(newestFirst, new IntervalSchedule(60_000), bounds);
    expect(expected.marks.map((mark) => [mark.at, mark.outcome, mark.runId, mark.runs])).toEqual([
      ['2026-01-01T00:02:00.000Z', 'taken-over', '2026-01-01T00:02:00.000Z', 1],
      ['2026-01-01T00:05:00.000Z', 'failed', 'a', 3],
      ['2026-01-01T00:09:00.000Z', 'running', '2026-01-01T00:09:00.000Z', 1],
    ]);
    const shuffled = [newestFirst[3], newestFirst[0], newestFirst[4], newestFirst[1], newestFirst[2]];
    expect(buildTimeline(shuffled, new IntervalSchedule(60_000), bounds)).toEqual(expected);
    expect(buildTimeline([...newestFirst].reverse(), new IntervalSchedule(60_000), bounds)).toEqual(expected);
  });

  it('a key that is not a due instant makes no mark (and is no gap filler)', () => {
    const from = Date.parse('2026-01-01T00:00:00Z');
    const to = Date.parse('2026-01-01T00:03:00Z');
    const timeline = buildTimeline(
      [
        row('2026-01-01T00:02:00.000X', 'failed'),
        row('2026-01-01T00:01:00.000Z', 'succeeded'),
        row('2026-01-01 00:00:00.000Z', 'failed'),
        row('2026-01-01T00:00:00.000Z', 'failed'),
      ],
      new IntervalSchedule(60_000),
      { from, to, readLimit: 100, knownSince: null },
    );
    expect(timeline.marks.map((mark) => [mark.at, mark.outcome])).toEqual([
      ['2026-01-01T00:00:00.000Z', 'failed'],
      ['2026-01-01T00:01:00.000Z', 'succeeded'],
    ]);
    expect(timeline.gaps).toEqual([{ from: '2026-01-01T00:02:00.000Z', to: '2026-01-01T00:03:00.000Z', occurrences: 1 }]);
  });

  const DAY = 86_400_000;
  const every30s = (from: number, to: number) => {
    const rows = [];
    for (let at = Math.ceil(from / 30_000) * 30_000; at < to; at += 30_000) rows.push(row(new Date(at).toISOString(), 'succeeded'));
    return rows.reverse(); // newest first, as read
  };

  it('when the rows are cut, the newest are kept and gaps are computed over the same window (none for a job that always ran)', () => {
    const to = Date.parse('2026-03-08T00:00:00Z');
    const from = to - 7 * DAY;
    // A job every 30 s that always succeeded: 20,160 occurrences; 12,000 read (+1 to know there are more).
    const rows = every30s(from, to).slice(0, 12_001);
    const timeline = buildTimeline(rows, new IntervalSchedule(30_000), { from, to, readLimit: 12_000, knownSince: null });
    expect(timeline.truncated).toBe(true);
    // The oldest row read (possibly partial) is left out: 12,000 occurrences are shown, newest first.
    expect(timeline.shownFrom).toBe(new Date(to - 12_001 * 30_000 + 1).toISOString());
    expect(timeline.buckets).not.toBeNull();
    const total = (key: 'succeeded' | 'notRun') => (timeline.buckets ?? []).reduce((sum, bucket) => sum + bucket[key], 0);
    expect(total('succeeded')).toBe(12_000);
    expect(total('notRun')).toBe(0);
    expect(timeline.gaps).toEqual([]);
  });

  it('claims no gap before the first known occurrence or deployment', () => {
    const to = Date.parse('2026-03-08T00:00:00Z');
    const from = to - DAY;
    const deployed = to - 120_000;
    const timeline = buildTimeline([row(new Date(to - 60_000).toISOString(), 'succeeded')], new IntervalSchedule(30_000), {
      from,
      to,
      readLimit: 12_000,
      knownSince: deployed,
    });
    expect(timeline.knownSince).toBe(new Date(deployed).toISOString());
    // Due at -120 s, -90 s (missing), -60 s (ran), -30 s (missing): nothing before the deployment.
    expect(timeline.gaps).toEqual([
      { from: new Date(to - 120_000).toISOString(), to: new Date(to - 60_000).toISOString(), occurrences: 2 },
      { from: new Date(to - 30_000).toISOString(), to: new Date(to).toISOString(), occurrences: 1 },
    ]);
  });

  it('a dense job is drawn in round buckets with counts per outcome', () => {
    const to = Date.parse('2026-03-08T00:00:00Z');
    const from = to - 3_600_000;
    // Every 2 s for an hour, one in ten failed, the last 10 minutes not run.
    const rows = [];
    for (let at = from; at < to - 600_000; at += 2_000) rows.push(row(new Date(at).toISOString(), (at / 2_000) % 10 === 0 ? 'failed' : 'succeeded'));
    const timeline = buildTimeline(rows.reverse(), new IntervalSchedule(2_000), { from, to, readLimit: 12_000, knownSince: null });
    expect(timeline.marks).toEqual([]);
    expect(timeline.bucketMs).toBe(30_000);
    expect(timeline.buckets).toHaveLength(120);
    expect(timeline.buckets?.[0]).toEqual(expect.objectContaining({ from: new Date(from).toISOString(), succeeded: 13, failed: 2, notRun: 0 }));
    expect(timeline.buckets?.[119]).toEqual(expect.objectContaining({ succeeded: 0, failed: 0, notRun: 15 }));
  });

  it('enumerates due instants newest first, also for a cron', () => {
    const to = Date.parse('2026-03-08T00:00:00Z');
    const { instants, cut } = dueInstantsNewestFirst(new CronSchedule('* * * * *', 'UTC'), to - 7 * DAY, to, 1_000);
    expect(cut).toBe(true);
    expect(instants).toHaveLength(1_000);
    expect(instants[999]).toBe(to - 60_000);
    expect(instants[0]).toBe(to - 1_000 * 60_000);
    expect(dueInstantsNewestFirst(new CronSchedule('0 3 * * *', 'UTC'), to - 7 * DAY, to, 1_000)).toEqual({
      instants: [1, 2, 3, 4, 5, 6, 7].map((day) => to - 8 * DAY + day * DAY + 3 * 3_600_000),
      cut: false,
    });
    expect([3_600_000, 6 * 3_600_000, DAY, 7 * DAY].map(bucketSizeOf)).toEqual([30_000, 120_000, 600_000, 3_600_000]);
  });
});

describe("the state a job's health window gives", () => {
  // The windows themselves are computed by PostgreSQL: test/integration/dashboard/dashboard-health.test.ts.
  const windowWith = (last10: { finished: number; succeeded: number }, consecutiveFailures: number) => ({
    last10,
    last24h: last10,
    consecutiveFailures,
    lastError: null,
    durationMs: null,
  });

  it('failing at two failures in a row or three of the last ten, degraded at one or two, ok at none', () => {
    expect(windowState(windowWith({ finished: 10, succeeded: 10 }, 0))).toBe('ok');
    expect(windowState(windowWith({ finished: 0, succeeded: 0 }, 0))).toBe('ok');
    expect(windowState(windowWith({ finished: 10, succeeded: 9 }, 1))).toBe('degraded');
    expect(windowState(windowWith({ finished: 10, succeeded: 8 }, 0))).toBe('degraded');
    expect(windowState(windowWith({ finished: 10, succeeded: 7 }, 0))).toBe('failing');
    expect(windowState(windowWith({ finished: 3, succeeded: 1 }, 2))).toBe('failing');
    // Alternately failed and succeeded: 5 of the last 10 failed, whichever came last.
    expect(windowState(windowWith({ finished: 10, succeeded: 5 }, 1))).toBe('failing');
    expect(windowState(windowWith({ finished: 10, succeeded: 5 }, 0))).toBe('failing');
  });
});

describe('the dashboard options, queries and page', () => {
  it('refuses to start open, accepts the loud opt-out outside production', () => {
    expect(() => resolveDashboardOptions({})).toThrow(InvalidDashboardOptionsError);
    expect(() => resolveDashboardOptions({ authorize: () => 'a', dangerouslyAllowEveryone: 'local-development' })).toThrow(/not both/);
    expect(() => resolveDashboardOptions({ dangerouslyAllowEveryone: 'local-development' }, 'production')).toThrow(/production/);
    const open = resolveDashboardOptions({ dangerouslyAllowEveryone: 'local-development', path: '/ops/jobs/' }, 'development');
    expect(open.path).toBe('/ops/jobs');
    expect(open.authorize({ headers: {} }, 'release')).toBe(EVERYONE);
    for (const path of ['jobs', '/a//b', '/a b', '/<x>']) expect(() => resolveDashboardOptions({ path, authorize: () => 'a' })).toThrow(/path must start/);
  });

  it('reads the runs query before any SQL', () => {
    expect(runFilterOf({ code: 'a.b', status: 'FAIL', from: '2026-01-01T00:00:00Z', limit: '20' })).toEqual({
      code: 'a.b',
      status: 'FAIL',
      from: new Date('2026-01-01T00:00:00Z'),
      limit: 20,
    });
    expect(runFilterOf({})).toEqual({ limit: 50 });
    expect(runFilterOf({ code: 'a.b', runKey: '2026-01-01T' })).toEqual({ code: 'a.b', runKeyPrefix: '2026-01-01T', limit: 50 });
    for (const query of [
      { status: 'LOST' },
      { limit: '0' },
      { limit: '201' },
      { from: 'soon' },
      { code: ['a', 'b'] },
      { code: { a: 1 } },
      { runKey: '2026' },
      { code: 'a.b', runKey: 'x'.repeat(513) },
    ]) {
      expect(() => runFilterOf(query)).toThrow(InvalidJobQueryOptionsError);
    }
    expect(timelineSpanOf({ span: '7d' })).toEqual({ span: '7d', ms: 7 * 86_400_000 });
    expect(() => timelineSpanOf({ span: 'toString' })).toThrow(InvalidJobQueryOptionsError);
    expect(fencingTokenOf({ fencingToken: '42' })).toBe(42);
    for (const fencingToken of ['0', '-1', '1e3', 'x', '99999999999999999'])
      expect(() => fencingTokenOf({ fencingToken })).toThrow(InvalidJobQueryOptionsError);
  });

  it('escapes what it writes into the page', () => {
    expect(escapeHtml(`<script>"&'`)).toBe('&lt;script&gt;&quot;&amp;&#39;');
    expect(renderDashboardPage('<a href="{{base}}/x" data-t="{{csrf}}">', '/"><script>', 't')).toBe('<a href="/&quot;&gt;&lt;script&gt;/x" data-t="t">');
  });

  it('CSRF: the header must equal the cookie', () => {
    const token = newCsrfToken();
    expect(csrfCookie(token, '/jobs', { headers: {} })).toBe(`sdcorejs-dashboard-csrf=${token}; Path=/jobs; HttpOnly; SameSite=Strict`);
    expect(csrfCookie(token, '/jobs', { headers: { 'x-forwarded-proto': 'https' } })).toMatch(/; Secure$/);
    const cookie = `other=1; sdcorejs-dashboard-csrf=${token}`;
    expect(csrfCookieOf({ headers: { cookie } })).toBe(token);
    expect(() => checkCsrf({ headers: { cookie, 'x-dashboard-csrf': token } })).not.toThrow();
    expect(() => checkCsrf({ headers: { cookie, 'x-dashboard-csrf': newCsrfToken() } })).toThrow(/CSRF/);
    expect(() => checkCsrf({ headers: { cookie } })).toThrow(/CSRF/);
    expect(() => checkCsrf({ headers: { 'x-dashboard-csrf': token } })).toThrow(/CSRF/);
  });
});
