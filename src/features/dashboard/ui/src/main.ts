// The operator dashboard's page script, bundled by esbuild into assets/dashboard.js. It talks only
// to the dashboard's JSON API (same origin), builds every element with createElement /
// textContent (no HTML is ever parsed from data) and draws the timeline as SVG by hand. Each view
// is a module; this one wires them: the first load, Refresh, every 15 s while the page is seen,
// and after every action.

import { onActionDone } from './actions';
import { byId } from './dom';
import { loadJobs } from './jobs-view';
import { loadLeases } from './leases-view';
import { wireRunDetail } from './run-detail-view';
import { reloadRuns, wireRuns } from './runs-view';
import { loadSchedules } from './schedules-view';
import { say } from './status';
import { loadTimeline, wireTimeline } from './timeline-view';

const REFRESH_EVERY_MS = 15000;

const refresh = (): Promise<void> =>
  Promise.all([
    // The schedules after the jobs: the first job (else the first schedule) is the timeline shown at first.
    loadJobs().then(loadSchedules),
    loadTimeline(),
    reloadRuns(),
    loadLeases(),
  ]).then(() => {
    // Tests wait for this: every part of the page has been drawn (or has said why not).
    document.body.setAttribute('data-loaded', String(Date.now()));
  });

document.addEventListener('DOMContentLoaded', () => {
  byId('refresh', HTMLButtonElement).addEventListener('click', () => {
    say('');
    void refresh();
  });
  wireTimeline();
  wireRuns();
  wireRunDetail();
  onActionDone(() => void refresh());
  void refresh();
  setInterval(() => {
    if (!document.hidden) void refresh();
  }, REFRESH_EVERY_MS);
});
