// "Needs attention", at the top of the page: the leases running past their lease (leases-view),
// the jobs whose health is failing, and the occurrences recorded as missed in the last 24 hours.

import { api } from './api';
import type { FailingJob, RunSummary, RunsPage } from './api-types';
import { byId, el, replaceContent } from './dom';
import { when } from './format';
import { lastErrorText, windowText } from './health';
import { showRun } from './run-detail-view';
import { messageOf, say } from './status';
import { showTimeline } from './timeline-view';

const DAY_MS = 86400000;

/** The failing jobs among all (the jobs answer's, not only its page): a line each, with what it failed with and its timeline. */
export const renderFailing = (failing: readonly FailingJob[], failingTotal: number): void => {
  const content = failing.length
    ? el(
        'ul',
        {},
        failing.map((job) =>
          el('li', { 'data-failing': job.name }, [
            el('button', { type: 'button', class: 'link', text: job.name, onclick: () => showTimeline('job:' + job.name) }),
            el('span', { text: ': ' + windowText(job.window) + (job.window.lastError ? '; last error ' + lastErrorText(job.window) : '') }),
          ]),
        ),
      )
    : el('p', { class: 'muted', text: 'None.' });
  replaceContent(byId('failing', HTMLElement), content);
  if (failingTotal > failing.length)
    byId('failing', HTMLElement).appendChild(
      el('p', { class: 'muted', text: failingTotal + ' failing in all; the first ' + failing.length + ' by name are listed.' }),
    );
};

const missedItem = (run: RunSummary): HTMLLIElement =>
  el('li', { 'data-missed': run.id }, [
    el('button', { type: 'button', class: 'link', text: run.code, onclick: () => showRun(run.id) }),
    el('span', { text: ' due ' + when(run.dueAt ?? run.createdAt) }),
  ]);

/** The occurrences recorded as missed (FAIL, outcome missed) in the last 24 hours, newest first. */
export const loadMissed = (): Promise<void> =>
  api<RunsPage>('runs?status=FAIL&limit=200&from=' + encodeURIComponent(new Date(Date.now() - DAY_MS).toISOString())).then(
    (page) => {
      const missed = page.runs.filter((run) => run.outcome === 'missed');
      const content = missed.length ? el('ul', {}, missed.slice(0, 20).map(missedItem)) : el('p', { class: 'muted', text: 'None.' });
      replaceContent(byId('missed', HTMLElement), content);
      if (missed.length > 20) byId('missed', HTMLElement).appendChild(el('p', { class: 'muted', text: missed.length + ' in all; the 20 newest are listed.' }));
    },
    (error: unknown) => {
      say('Missed: ' + messageOf(error), true);
    },
  );
