import { join } from 'node:path';
import type { JobSchedulerDashboardController } from '../../../src/features/dashboard/dashboard.controller';
import { loadDashboardAssets } from '../../../src/features/dashboard/dashboard-assets';
import type * as Page from '../../../src/features/dashboard/ui/src/api-types';

/** What a route of the controller answers (its JSON: the views hold strings, not dates). */
type Answer<Route extends keyof JobSchedulerDashboardController> = JobSchedulerDashboardController[Route] extends (...args: never[]) => Promise<infer T>
  ? T
  : never;

/** Compiles only when what the server answers fits what the page reads (`npm run typecheck`). */
const fits = <_Server extends Read, Read>(): true => true;

describe("the page's sources (ui/src) and the server", () => {
  it('read the JSON API as the controller answers it (checked at compile time)', () => {
    expect([
      fits<Answer<'jobs'>, Page.JobsAnswer>(),
      fits<Answer<'dynamicSchedules'>, Page.SchedulesPage>(),
      fits<Answer<'timeline'>, Page.Timeline>(),
      fits<Answer<'scheduleTimeline'>, Page.Timeline>(),
      fits<Answer<'runs'>, Page.RunsPage>(),
      fits<Answer<'run'>, Page.RunDetail>(),
      fits<Answer<'expiredLeases'>, Page.LeasesAnswer>(),
      fits<Answer<'pause'>, Page.ActionAnswer>(),
      fits<Answer<'resume'>, Page.ActionAnswer>(),
      fits<Answer<'release'>, Page.ActionAnswer>(),
      fits<Answer<'pauseSchedule'>, Page.ActionAnswer>(),
      fits<Answer<'resumeSchedule'>, Page.ActionAnswer>(),
    ]).not.toContain(false);
  });

  it('are bundled into the served script when the server runs from src/', () => {
    const { script, html, style } = loadDashboardAssets(join(__dirname, '../../../src/features/dashboard/ui'));
    expect(script).toContain('built by esbuild from src/features/dashboard/ui/src');
    expect(script).toContain('X-Dashboard-Csrf');
    expect(script).not.toMatch(/^\s*(import|export)\s/m);
    expect(html).toContain('/assets/dashboard.js');
    expect(style.length).toBeGreaterThan(0);
  }, 30_000);
});
