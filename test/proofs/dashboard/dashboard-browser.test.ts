import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { DynamicSchedules } from '../../../src/features';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';
import { sleep } from '../../support/lease-nodes';
import { type Browser, chromiumAvailable, launchBrowser } from '../../integration/dashboard/browser';
import { type DashboardApp, OPERATOR, READER, seedRuns, startDashboardApp, ticks } from '../../integration/dashboard/dashboard-app';

const HOUR = 3_600_000;
/** The hour the file started in: the seeded runs and the tests that look for them agree across a whole hour. */
const THIS_HOUR = Math.floor(Date.now() / HOUR) * HOUR;
const hourAgo = (hours: number): string => new Date(THIS_HOUR - hours * HOUR).toISOString();
const QUARTER_HOUR = 15 * 60_000;
/**
 * billing.quarter-hour is a real `*\/15 * * * *` job: a test that reads its runs starts at least
 * `marginMs` before its next occurrence, or just after it (once that run has ended).
 */
const awayFromQuarterHour = async (marginMs: number): Promise<void> => {
  const next = Math.ceil(Date.now() / QUARTER_HOUR) * QUARTER_HOUR;
  if (next - Date.now() < marginMs) await sleep(next - Date.now() + 5_000);
};
const SCREENSHOTS = resolve(__dirname, '../../../.tmp/dashboard-screenshots');

/** The light scheme's colours of each outcome (dashboard.css). */
const COLOURS: Record<string, string> = {
  succeeded: 'rgb(26, 127, 55)',
  failed: 'rgb(207, 34, 46)',
  missed: 'rgb(188, 76, 0)',
  running: 'rgb(9, 105, 218)',
  'taken-over': 'rgb(130, 80, 223)',
};

const SEEDED: { runKey: string; status: 'SUCCESS' | 'FAIL' | 'RUNNING'; attempts?: number; data?: unknown; outcome: string }[] = [
  { runKey: hourAgo(0), status: 'SUCCESS', outcome: 'succeeded' },
  { runKey: hourAgo(1), status: 'RUNNING', outcome: 'running' },
  { runKey: hourAgo(2), status: 'FAIL', data: { error: { message: '<img src=x onerror=alert(1)>' } }, outcome: 'failed' },
  { runKey: hourAgo(3), status: 'FAIL', data: { outcome: 'missed' }, outcome: 'missed' },
  { runKey: hourAgo(4), status: 'SUCCESS', attempts: 2, outcome: 'taken-over' },
  // hours 5 to 7: not recorded (a gap)
  { runKey: hourAgo(8), status: 'SUCCESS', outcome: 'succeeded' },
  { runKey: hourAgo(9), status: 'SUCCESS', outcome: 'succeeded' },
  { runKey: hourAgo(10), status: 'FAIL', outcome: 'failed' },
];

/** What the page functions below use of the browser's window (this project compiles without the DOM library). */
interface StyleWindow {
  getComputedStyle(element: unknown): { fill: string };
}
/**
 * Waits until the page's status line matches. Polled from here: Playwright's waitForFunction
 * evaluates its predicate with eval, which the page's CSP (rightly) refuses.
 */
const waitForStatus = async (target: Page, pattern: RegExp): Promise<void> => {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const text = await target.textContent('#status');
    if (text !== null && pattern.test(text)) return;
    if (Date.now() > deadline) throw new Error(`the status line says ${JSON.stringify(text)}, not ${String(pattern)}`);
    await sleep(50);
  }
};

const describeInBrowser = chromiumAvailable() ? describe : describe.skip;

describeInBrowser('the dashboard in a real browser (chromium)', () => {
  jest.setTimeout(120_000);
  let database: TestDatabase;
  let first: DashboardApp;
  let second: DashboardApp;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    database = await createTestDatabase();
    await seedRuns(
      database,
      SEEDED.map((run) => ({ code: 'reports.hourly-digest', ...run, heartbeatAgoMs: 0 })),
    );
    first = await startDashboardApp(database, { name: 'a', dynamic: true, runOnce: true });
    await first.app
      .get(DynamicSchedules)
      .upsert({ id: 'tenant-42/weekly', handler: 'reports.tenant-export', cron: '0 3 * * 1', timeZone: 'America/New_York', tenantId: '42' });
    // The schedule's one occurrence, 8 days ago (outside the timeline's 7 days), failed.
    await seedRuns(database, [
      {
        code: 'reports.tenant-export',
        runKey: `schedule=tenant-42%2Fweekly ${new Date(Math.floor(Date.now() / 60_000) * 60_000 - 8 * 86_400_000).toISOString()}`,
        status: 'FAIL',
        data: { error: { name: 'Error', message: 'export refused' } },
      },
    ]);
    second = await startDashboardApp(database, { name: 'b' });
    browser = await launchBrowser();
    page = await browser.page({ headers: { authorization: OPERATOR } });
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('dialog', (dialog) => void dialog.accept());
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([first?.close(), second?.close()]);
    await database?.drop();
  });

  const open = async (target: Page = page) => {
    const response = await target.goto(`${first.url}/jobs`);
    await target.waitForSelector('body[data-loaded]');
    return response;
  };

  it('lists the declared jobs, with no CSP violation or script error', async () => {
    const response = await open();
    expect(response?.status()).toBe(200);
    const names = await page.$$eval('tr[data-job] th', (cells) => cells.map((cell) => cell.textContent));
    // Declared jobs, then @RunOnce methods, each by name.
    expect(names).toEqual(['billing.every-second', 'billing.quarter-hour', 'reports.hourly-digest', 'reports.nightly-export @RunOnce NightlyExport.export']);
    expect(await page.textContent('tr[data-job="reports.hourly-digest"]')).toContain('every hour at minute 0 (Europe/Paris)');
    // Each job with its last outcome beside its health, as the schedules below.
    expect(await page.$$eval('#jobs thead th', (cells) => cells.map((cell) => cell.textContent))).toEqual(expect.arrayContaining(['Last outcome', 'Health']));
    expect(await page.textContent('tr[data-job="reports.hourly-digest"] td[data-label="Last outcome"]')).toBe('succeeded');
    expect(await page.textContent('tr[data-schedule="tenant-42/weekly"]')).toContain('Monday at 03:00 (America/New_York)');
    // Each schedule with its last outcome and health (the jobs' health cell: badge, window, last error).
    const headings = await page.$$eval('#schedules thead th', (cells) => cells.map((cell) => cell.textContent));
    expect(headings).toEqual(expect.arrayContaining(['Last outcome', 'Health']));
    const schedule = 'tr[data-schedule="tenant-42/weekly"]';
    expect(await page.textContent(`${schedule} td[data-label="Last outcome"]`)).toBe('failed');
    expect(await page.textContent(`${schedule} td[data-label="Health"] .badge`)).toBe('degraded');
    expect(await page.textContent(`${schedule} td[data-label="Health"]`)).toContain('last 10: 0/1 succeeded');
    expect(await page.textContent(`${schedule} td[data-label="Health"] .error-line`)).toContain('export refused');
    expect(problems).toEqual([]);
  });

  /** Shows the hourly digest's timeline (the first job listed, billing.every-second, is shown at first). */
  const showHourlyDigest = async () => {
    await page.selectOption('#timeline-job', 'job:reports.hourly-digest');
    await page.waitForSelector('#timeline svg[aria-label$="occurrences of reports.hourly-digest"]');
  };

  it('draws one mark per occurrence, each in its outcome colour, and the gap', async () => {
    await showHourlyDigest();
    const marks = await page.$$eval('#timeline .mark', (elements) =>
      elements.map((element) => ({
        at: element.getAttribute('data-at'),
        outcome: element.getAttribute('data-outcome'),
        fill: (globalThis as unknown as StyleWindow).getComputedStyle(element).fill,
      })),
    );
    const recorded = await database.sql<{ runKey: string }>(
      `SELECT DISTINCT "runKey" FROM "job-scheduler" WHERE code = 'reports.hourly-digest' AND "runKey" >= $1`,
      [new Date(Date.now() - 24 * HOUR).toISOString()],
    );
    expect(marks).toHaveLength(recorded.length);
    for (const seeded of SEEDED) {
      const mark = marks.filter((candidate) => candidate.at === seeded.runKey);
      expect(mark).toEqual([{ at: seeded.runKey, outcome: seeded.outcome, fill: COLOURS[seeded.outcome] }]);
    }
    expect(await page.$$eval('#timeline .gap', (elements) => elements.length)).toBeGreaterThanOrEqual(1);
    // Data is text, never markup: the seeded error's <img> is not an element.
    expect(await page.$$('img')).toHaveLength(0);
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard.png'), fullPage: true });
  });

  it('offers spans of 1 h, 6 h, 24 h and 7 days with ticks on round times, and draws a dense job in buckets', async () => {
    // billing.every-second ran every second of the two hours before the app started: more than 600 occurrences in any span.
    const end = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    await database.sql(
      `INSERT INTO "job-scheduler" ("lockKey", code, name, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts,
         "createdAt", "modifiedAt", "startedAt", "finishedAt")
       SELECT 'dense:' || i, 'billing.every-second', 'billing.every-second', 'SCHEDULE', (CASE WHEN i % 10 = 0 THEN 'FAIL' ELSE 'SUCCESS' END)::"job-scheduler_status_enum",
         gen_random_uuid(), to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 60000, 'seed-node:1', nextval('"job-scheduler_fencingToken_seq"'), 1,
         k.at, k.at, k.at, k.at
       FROM generate_series(0, 7199) AS i CROSS JOIN LATERAL (SELECT to_timestamp($1::bigint / 1000.0) - i * interval '1 second' AS at) AS k
       ON CONFLICT DO NOTHING`,
      [end],
    );
    await page.selectOption('#timeline-job', 'job:billing.every-second');
    const steps: Record<string, number> = { '1h': 600_000, '6h': 3_600_000, '24h': 10_800_000, '7d': 86_400_000 };
    for (const span of ['1h', '6h', '24h', '7d']) {
      await page.click(`button.span[data-span="${span}"]`);
      await page.waitForSelector(`button.span[data-span="${span}"][aria-pressed="true"]`);
      await page.waitForSelector('#timeline .bucket');
      // Ticks sit on round instants of the zone shown (UTC by default): every 10 min, hour, 3 h, midnight.
      const deadline = Date.now() + 10_000;
      let ticks: number[];
      do {
        ticks = await page.$$eval('#timeline text.tick', (labels) => labels.map((label) => Date.parse(label.getAttribute('data-at') ?? '')));
        if (ticks.length >= 2 && ticks[1] - ticks[0] === steps[span]) break;
        await sleep(50);
      } while (Date.now() < deadline);
      expect(ticks.length).toBeGreaterThanOrEqual(4);
      for (const tick of ticks) expect([span, tick % steps[span]]).toEqual([span, 0]);
    }
    await page.click('button.span[data-span="6h"]');
    await page.waitForSelector('button.span[data-span="6h"][aria-pressed="true"]');
    await sleep(300);
    const buckets = await page.$$eval('#timeline .bucket', (groups) => groups.map((group) => group.getAttribute('data-counts') ?? ''));
    // 2 minutes a bucket: 120 occurrences each, one in ten failed, none wrongly "did not run" inside the seeded stretch.
    const full = buckets.filter((counts) => /succeeded=108 .*failed=12 .*not-run=0 /.test(counts));
    expect(full.length).toBeGreaterThanOrEqual(50);
    expect(await page.$$('#timeline .mark[data-at]')).toHaveLength(0);
    expect(await page.textContent('#timeline-summary')).toMatch(/occurrence\(s\) in \d+ bucket\(s\) of 2 min/);
    await page.click('button.span[data-span="24h"]');
    await page.waitForSelector('button.span[data-span="24h"][aria-pressed="true"]');
    await database.sql(`DELETE FROM "job-scheduler" WHERE "lockKey" LIKE 'dense:%'`);
  });

  it('searches the jobs by a part of their name, and back', async () => {
    const names = () => page.$$eval('#jobs tr[data-job]', (rows) => rows.map((row) => row.getAttribute('data-job')));
    await page.fill('#job-filters input[name="q"]', 'BILLING');
    await page.click('#job-filters button[type="submit"]');
    await page.waitForSelector('#jobs tr[data-job="reports.hourly-digest"]', { state: 'detached' });
    expect(await names()).toEqual(['billing.every-second', 'billing.quarter-hour']);
    expect(await page.isDisabled('#jobs-next')).toBe(true);
    await page.fill('#job-filters input[name="q"]', 'no-such-job');
    await page.click('#job-filters button[type="submit"]');
    await page.waitForSelector('#jobs p:text("No job matches.")');
    await page.fill('#job-filters input[name="q"]', '');
    await page.click('#job-filters button[type="submit"]');
    await page.waitForSelector('#jobs tr[data-job="reports.hourly-digest"]');
    expect(await names()).toHaveLength(4);
  });

  it('searches the dynamic schedules and pages through them by id', async () => {
    const schedules = first.app.get(DynamicSchedules);
    for (let index = 0; index < 120; index++) {
      await schedules.upsert({ id: `fleet/${String(index).padStart(4, '0')}`, handler: 'reports.tenant-export', every: '1d', enabled: false });
    }
    // Removed whatever happens: left behind, they fill the first page and fail the tests after this one.
    try {
      await open();
      const ids = () => page.$$eval('#schedules tr[data-schedule]', (rows) => rows.map((row) => row.getAttribute('data-schedule')));
      expect(await ids()).toHaveLength(100);
      expect(await page.isDisabled('#schedules-next')).toBe(false);
      await page.click('#schedules-next');
      await page.waitForSelector('#schedules tr[data-schedule="tenant-42/weekly"]');
      expect(await ids()).toHaveLength(21);
      await page.fill('#schedule-filters input[name="q"]', 'fleet/011');
      await page.click('#schedule-filters button[type="submit"]');
      // fleet/0110 is on the second page too: wait for a row the search leaves out to go.
      await page.waitForSelector('#schedules tr[data-schedule="tenant-42/weekly"]', { state: 'detached' });
      await page.waitForSelector('#schedules tr[data-schedule="fleet/0110"]');
      expect(await ids()).toEqual(Array.from({ length: 10 }, (_, index) => `fleet/011${index}`));
      expect(await page.isDisabled('#schedules-next')).toBe(true);
      await page.fill('#schedule-filters input[name="q"]', '');
      await page.click('#schedule-filters button[type="submit"]');
      await page.waitForSelector('#schedules tr[data-schedule="fleet/0000"]');
    } finally {
      for (let index = 0; index < 120; index++) await schedules.remove(`fleet/${String(index).padStart(4, '0')}`);
      await open();
    }
  });

  it('lists a @RunOnce method with its timeline, and says it has no run now or pause', async () => {
    const row = 'tr[data-job="reports.nightly-export"]';
    expect(await page.textContent(`${row} td[data-label="Schedule"]`)).toContain('0 0 3 * * *');
    expect(await page.$$(`${row} button:text("Run now")`)).toHaveLength(0);
    expect(await page.$$(`${row} button:text("Pause")`)).toHaveLength(0);
    expect(await page.textContent(`${row} td.actions`)).toContain('there is no run now or pause');
    await page.click(`${row} button:text("Timeline")`);
    await page.waitForSelector('#timeline svg[aria-label="0 occurrences of reports.nightly-export"]');
    expect(await page.textContent('#status')).not.toMatch(/404/);
  });

  it("shows a dynamic schedule's timeline, and back", async () => {
    await page.click('tr[data-schedule="tenant-42/weekly"] button:text("Timeline")');
    await page.waitForSelector('#timeline svg[aria-label="0 occurrences of tenant-42/weekly"]');
    await page.click('tr[data-job="reports.hourly-digest"] button:text("Timeline")');
    await page.waitForSelector('#timeline svg[aria-label$="occurrences of reports.hourly-digest"]');
  });

  it('is keyboard-usable: Tab reaches the buttons, Enter opens a run from the timeline', async () => {
    await page.focus('#timeline .mark');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#run-detail[open]');
    expect(await page.textContent('#run-detail-fields')).toContain('reports.hourly-digest');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#run-detail:not([open])', { state: 'attached' });
    await page.focus('#refresh');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement && document.activeElement.tagName')).toMatch(/BUTTON|SELECT/);
  });

  it('run now makes a new run appear in the runs list', async () => {
    await page.click('tr[data-job="billing.quarter-hour"] button:text("Run now")');
    await waitForStatus(page, /^Run now: done$/);
    await page.selectOption('#runs-code', 'billing.quarter-hour');
    await page.click('#run-filters button[type="submit"]');
    // Until the filtered page replaces the one shown before.
    const deadline = Date.now() + 30_000;
    let rows: (string | null)[][];
    do {
      await sleep(50);
      rows = await page.$$eval('#runs tr[data-run]', (elements) =>
        elements.map((element) => [element.children[1].textContent, element.children[3].textContent]),
      );
    } while ((rows.length === 0 || rows.some(([code]) => code !== 'billing.quarter-hour')) && Date.now() < deadline);
    // The run now, and any quarter hour that fell due since the application started (a real cron).
    expect(rows.filter(([, key]) => key?.startsWith('run-now '))).toHaveLength(1);
    expect(rows.every(([, key]) => key?.startsWith('run-now ') || /^\d{4}-\d{2}-\d{2} \d{2}:(00|15|30|45):00 UTC$/.test(key ?? ''))).toBe(true);
    const runNow = '#runs tr[data-run]:has-text("run-now ")';
    // A run the scheduler ran records its handler's run time: its start is shown apart from the claim.
    const instant = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/;
    expect(await page.textContent(`${runNow} td[data-label="Claimed"]`)).toMatch(instant);
    expect(await page.textContent(`${runNow} td[data-label="Started"]`)).toMatch(instant);
    await page.click(`${runNow} button.link`);
    await page.waitForSelector('#run-detail[open]');
    const fields = await page.textContent('#run-detail-fields');
    expect(fields).toMatch(/Claimed \(lease acquired\)\d{4}-\d{2}-\d{2} /);
    expect(fields).toMatch(/Started \(handler\)\d{4}-\d{2}-\d{2} /);
    expect(fields).toMatch(/Handler ran\d+ ms/);
    expect(await page.textContent('#run-detail-data')).toMatch(/"handlerMs": \d+/);
    await page.click('#run-detail-close');
  });

  it('pause stops the job on a second instance, shown as disabled; resume restarts it', async () => {
    await sleep(1_500);
    expect(ticks.some((tick) => tick.node === 'b') || ticks.some((tick) => tick.node === 'a')).toBe(true);
    await page.click('tr[data-job="billing.every-second"] button:text("Pause")');
    await waitForStatus(page, /^Pause: done$/);
    await page.waitForSelector('tr[data-job="billing.every-second"] .health-disabled');
    // The second instance reads the pause within its poll (200 ms here).
    const deadline = Date.now() + 5_000;
    while (second.scheduled.isEnabled('billing.every-second') && Date.now() < deadline) await sleep(50);
    expect(second.scheduled.isEnabled('billing.every-second')).toBe(false);
    await Promise.all([first.scheduled.idle(), second.scheduled.idle()]);
    const pausedAt = Date.now();
    await sleep(2_500);
    expect(ticks.filter((tick) => tick.scheduledAt.getTime() > pausedAt)).toEqual([]);
    await page.click('tr[data-job="billing.every-second"] button:text("Resume")');
    await waitForStatus(page, /^Resume: done$/);
    const resumed = Date.now() + 5_000;
    while (!second.scheduled.isEnabled('billing.every-second') && Date.now() < resumed) await sleep(50);
    expect(second.scheduled.isEnabled('billing.every-second')).toBe(true);
    await sleep(2_500);
    expect(ticks.filter((tick) => tick.scheduledAt.getTime() > pausedAt).length).toBeGreaterThanOrEqual(1);
  });

  it('release refuses when the fencing token changed meanwhile', async () => {
    // A lease no declared job owns: the instances' take-over scans (every 30 s) leave it to the operator.
    const [stuck] = await seedRuns(database, [
      { code: 'ledger.manual-close', runKey: hourAgo(1), status: 'RUNNING', heartbeatAgoMs: 30 * 60_000, leaseMs: 60_000 },
    ]);
    await open();
    await page.waitForSelector(`#leases tr[data-lease="${stuck.id}"]`);
    expect(await page.textContent(`#leases tr[data-lease="${stuck.id}"]`)).toContain(stuck.fencingToken);
    await database.sql(`UPDATE "job-scheduler" SET "fencingToken" = nextval('"job-scheduler_fencingToken_seq"') WHERE id = $1`, [stuck.id]);
    await page.click(`#leases tr[data-lease="${stuck.id}"] button:text("Release")`);
    await waitForStatus(page, /^Release failed: 409/);
    const [row] = await database.sql<{ status: string; fencingToken: string }>(
      'SELECT status, "fencingToken"::text AS "fencingToken" FROM "job-scheduler" WHERE id = $1',
      [stuck.id],
    );
    expect(row.status).toBe('RUNNING');
    // With the token it now shows, it is released.
    await page.click('#refresh');
    await page.waitForSelector(`#leases tr[data-lease="${stuck.id}"] td:text-is("${row.fencingToken}")`);
    await page.click(`#leases tr[data-lease="${stuck.id}"] button:text("Release")`);
    await waitForStatus(page, /^Release: done$/);
    const [after] = await database.sql<{ status: string }>('SELECT status FROM "job-scheduler" WHERE id = $1', [stuck.id]);
    expect(after.status).toBe('FAIL');
    expect(first.actions.filter((entry) => entry.action === 'release').map((entry) => [entry.actor, entry.applied])).toEqual([
      ['olga the operator', false],
      ['olga the operator', true],
    ]);
  });

  it('puts the urgent things first: leases past their lease, failing jobs, missed occurrences', async () => {
    const [stuck] = await seedRuns(database, [
      { code: 'ledger.month-end', runKey: hourAgo(2), status: 'RUNNING', heartbeatAgoMs: 20 * 60_000, leaseMs: 60_000 },
    ]);
    // billing.quarter-hour failed its last two occurrences: failing, with its error. Its real
    // occurrences since the application started (a quarter hour may have passed) are removed, and
    // none falls due while the page is read.
    await awayFromQuarterHour(60_000);
    await database.sql(`DELETE FROM "job-scheduler" WHERE code = 'billing.quarter-hour' AND "runKey" ~ '^[0-9]{4}-'`);
    await seedRuns(database, [
      { code: 'billing.quarter-hour', runKey: hourAgo(3), status: 'FAIL', data: { error: { name: 'Error', message: 'card processor <down>' } } },
      { code: 'billing.quarter-hour', runKey: hourAgo(4), status: 'FAIL', data: { error: { name: 'Error', message: 'card processor <down>' } } },
    ]);
    await open();
    const headings = await page.$$eval('main > section > h2', (elements) => elements.map((element) => element.textContent));
    expect(headings[0]).toBe('Needs attention');
    await page.waitForSelector(`#leases tr[data-lease="${stuck.id}"]`);
    expect(await page.textContent('#failing [data-failing="billing.quarter-hour"]')).toMatch(/2 failure\(s\) in a row; last error .*card processor <down>/);
    // The seeded missed occurrence of the hourly digest.
    expect(await page.textContent('#missed')).toContain('reports.hourly-digest');
    expect(await page.textContent('tr[data-job="billing.quarter-hour"] .badge')).toBe('failing');
    await database.sql('DELETE FROM "job-scheduler" WHERE id = $1', [stuck.id]);
  });

  it("shows a failed run's error where it says Error, and the claim apart from the handler's start", async () => {
    await showHourlyDigest();
    await page.click(`#timeline .mark[data-at="${hourAgo(2)}"]`);
    await page.waitForSelector('#run-detail[open]');
    expect(await page.textContent('#run-detail-error')).toContain('<img src=x onerror=alert(1)>');
    const fields = await page.textContent('#run-detail-fields');
    expect(fields).toContain('Claimed (lease acquired)');
    // Seeded without data.handlerMs: the handler's start is not known, the claim still is.
    expect(fields).toMatch(/Started \(handler\)not recorded/);
    expect(fields).toContain('Due' + hourAgo(2).slice(0, 10) + ' ' + hourAgo(2).slice(11, 19) + ' UTC');
    expect(await page.$$('img')).toHaveLength(0);
    await page.click('#run-detail-close');
  });

  it('shows every instant in one zone, labelled, switchable between UTC and the browser zone (remembered)', async () => {
    await open();
    expect(await page.inputValue('#zone')).toBe('utc');
    const key = hourAgo(2);
    await page.selectOption('#runs-code', 'reports.hourly-digest');
    await page.click('#run-filters button[type="submit"]');
    await page.waitForSelector(`#runs tr[data-run] td[data-label="Run key"] span[title="${key}"]`);
    const utcText = await page.textContent(`#runs td[data-label="Run key"] span[title="${key}"]`);
    expect(utcText).toBe(key.slice(0, 10) + ' ' + key.slice(11, 19) + ' UTC');
    await page.selectOption('#zone', 'local');
    // Asia/Kolkata is UTC+05:30: the same instant, its wall time there, labelled with the offset.
    const local = new Date(Date.parse(key) + 5.5 * HOUR).toISOString();
    const localText = local.slice(0, 10) + ' ' + local.slice(11, 19) + ' UTC+05:30';
    const deadline = Date.now() + 10_000;
    while ((await page.textContent(`#runs td[data-label="Run key"] span[title="${key}"]`)) !== localText && Date.now() < deadline) await sleep(50);
    expect(await page.textContent(`#runs td[data-label="Run key"] span[title="${key}"]`)).toBe(localText);
    // The axis follows: the 24 h ticks fall every 3 hours of Kolkata's clock (at :30 UTC).
    await page.waitForSelector('#timeline text.tick');
    const ticks = await page.$$eval('#timeline text.tick', (labels) => labels.map((label) => Date.parse(label.getAttribute('data-at') ?? '')));
    for (const tick of ticks) expect((tick + 5.5 * HOUR) % (3 * HOUR)).toBe(0);
    // Remembered across a reload.
    await open();
    expect(await page.inputValue('#zone')).toBe('local');
    expect(await page.textContent('#refreshed')).toMatch(/Asia\/(Kolkata|Calcutta)/);
    await page.selectOption('#zone', 'utc');
  });

  it('refreshes itself while seen, not while the tab is hidden, and at once when shown again', async () => {
    await open();
    const count = async () => Number(await page.getAttribute('body', 'data-refreshes'));
    await page.evaluate(
      "Object.defineProperty(document, 'hidden', { configurable: true, get: () => true }); document.dispatchEvent(new Event('visibilitychange'))",
    );
    const hiddenAt = await count();
    // Longer than the 15 s poll: nothing while hidden.
    await sleep(16_000);
    expect(await count()).toBe(hiddenAt);
    await page.evaluate(
      "Object.defineProperty(document, 'hidden', { configurable: true, get: () => false }); document.dispatchEvent(new Event('visibilitychange'))",
    );
    const deadline = Date.now() + 5_000;
    while ((await count()) === hiddenAt && Date.now() < deadline) await sleep(50);
    expect(await count()).toBe(hiddenAt + 1);
  });

  it("refuses visitors without credentials (401) and a reader's actions (403), showing no data", async () => {
    const anonymous = await browser.page();
    const response = await anonymous.goto(`${first.url}/jobs`);
    expect(response?.status()).toBe(401);
    expect(await anonymous.content()).not.toContain('hourly-digest');
    // A browser gets a short page that says what to do, not raw JSON; an API client keeps JSON.
    expect(await anonymous.textContent('h1')).toBe('Sign in needed');
    expect(await anonymous.content()).not.toContain('{"message"');
    const api = await fetch(`${first.url}/jobs`, { headers: { accept: 'application/json' } });
    expect([api.status, await api.json()]).toEqual([401, { message: 'Unauthorized', statusCode: 401 }]);
    const reader = await browser.page({ headers: { authorization: READER } });
    reader.on('dialog', (dialog) => void dialog.accept());
    await open(reader);
    await reader.click('tr[data-job="billing.quarter-hour"] button:text("Run now")');
    await waitForStatus(reader, /^Run now failed: 403/);
  });

  it('works in the dark scheme and on a narrow screen (screenshots)', async () => {
    const dark = await browser.page({ headers: { authorization: OPERATOR }, colorScheme: 'dark' });
    await open(dark);
    await dark.waitForSelector('#timeline svg');
    expect(await dark.evaluate('getComputedStyle(document.body).backgroundColor')).toBe('rgb(13, 17, 23)');
    await dark.screenshot({ path: join(SCREENSHOTS, 'dashboard-dark.png'), fullPage: true });
    const narrow = await browser.page({ headers: { authorization: OPERATOR }, width: 390, height: 844 });
    await open(narrow);
    // The page itself does not scroll sideways: wide tables scroll inside their frame.
    expect(await narrow.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1')).toBe(true);
    // Every job's and schedule's health and actions are in view at 390 px, without scrolling sideways.
    for (const selector of [
      'tr[data-job="reports.hourly-digest"] td.health .badge',
      'tr[data-job="reports.hourly-digest"] button:text("Run now")',
      'tr[data-schedule="tenant-42/weekly"] td.health .badge',
      'tr[data-schedule="tenant-42/weekly"] button:text("Run now")',
    ]) {
      const box = await narrow.locator(selector).boundingBox();
      expect(box).not.toBeNull();
      expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(390);
    }
    await narrow.screenshot({ path: join(SCREENSHOTS, 'dashboard-narrow.png'), fullPage: true });
  });
});
