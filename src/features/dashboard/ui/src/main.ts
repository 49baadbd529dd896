// The operator dashboard's page script, bundled by esbuild into assets/dashboard.js. It talks only
// to the dashboard's JSON API (same origin), builds every element with createElement /
// textContent (no HTML is ever parsed from data) and draws the timeline as SVG by hand. Each view
// is a module; this one wires them: the first load, Refresh, every 15 s while the page is seen
// (and at once when it is shown again), after every action, and the zone every instant is shown in.

import { onActionDone } from './actions';
import { loadMissed } from './attention-view';
import { byId } from './dom';
import { clockOf, currentZone, setZone, zoneName } from './format';
import { loadJobs, wireJobs } from './jobs-view';
import { loadLeases } from './leases-view';
import { wireRunDetail } from './run-detail-view';
import { reloadRuns, wireRuns } from './runs-view';
import { loadSchedules, wireSchedules } from './schedules-view';
import { say } from './status';
import { loadTimeline, redrawTimeline, wireTimeline } from './timeline-view';

const REFRESH_EVERY_MS = 15000;

let refreshes = 0;

const refresh = (): Promise<void> =>
  Promise.all([
    // The schedules after the jobs: the first job (else the first schedule) is the timeline shown at first.
    loadJobs().then(loadSchedules),
    loadTimeline(),
    reloadRuns(),
    loadLeases(),
    loadMissed(),
  ]).then(() => {
    // Tests wait for this: every part of the page has been drawn (or has said why not).
    document.body.setAttribute('data-loaded', String(Date.now()));
    document.body.setAttribute('data-refreshes', String(++refreshes));
    byId('refreshed', HTMLElement).textContent = 'updated ' + clockOf(Date.now(), true) + ' ' + zoneName();
  });

/** The zone select: every instant of the page is shown again in the zone chosen (remembered). */
const wireZone = (): void => {
  const select = byId('zone', HTMLSelectElement);
  select.value = currentZone();
  const localOption = select.querySelector('option[value="local"]');
  if (localOption) localOption.textContent = "this browser's zone (" + (Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'local') + ')';
  select.addEventListener('change', () => {
    setZone(select.value === 'local' ? 'local' : 'utc');
    redrawTimeline();
    void refresh();
  });
};

document.addEventListener('DOMContentLoaded', () => {
  byId('refresh', HTMLButtonElement).addEventListener('click', () => {
    say('');
    void refresh();
  });
  wireZone();
  wireTimeline();
  wireRuns();
  wireJobs();
  wireSchedules();
  wireRunDetail();
  onActionDone(() => void refresh());
  void refresh();
  // Polling, paused while the tab is hidden; a tab shown again is refreshed at once.
  setInterval(() => {
    if (!document.hidden) void refresh();
  }, REFRESH_EVERY_MS);
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) void refresh();
  });
});
