// The jobs: declared (@Scheduled) and @RunOnce methods, with schedule in words, time zone, next
// due instants, last success, health, and the actions their kind has (run now, pause or resume;
// a @RunOnce method has neither, and says so), and the timeline. A page at a time (declared, then
// @RunOnce, by name; keyset paging), searchable by a part of the name; the failing jobs among all
// of them go to "Needs attention".

import { action } from './actions';
import { api, newest } from './api';
import type { Job, JobsAnswer } from './api-types';
import { renderFailing } from './attention-view';
import { offerChoices } from './choices';
import { healthCell, outcomeCell } from './health';
import { byId, cell, el, replaceContent, table } from './dom';
import { when } from './format';
import { keysetPages } from './keyset-pages';
import { messageOf, say } from './status';
import { showTimeline } from './timeline-view';

/** The jobs of the last answer's page ([] until one arrives). */
let jobs: readonly Job[] = [];

export const declaredJobs = (): readonly Job[] => jobs;

const jobRow = (job: Job): HTMLTableRowElement => {
  const path = 'jobs/' + encodeURIComponent(job.name) + '/';
  const show = el('button', { type: 'button', text: 'Timeline', onclick: () => showTimeline('job:' + job.name) });
  const buttons: Array<Node | string> = [];
  if (job.actions.runNow) buttons.push(action('Run now', path + 'run-now'));
  if (job.actions.pause)
    buttons.push(job.paused ? action('Resume', path + 'resume') : action('Pause', path + 'pause', 'Pause ' + job.name + ' on every instance?'));
  buttons.push(show);
  if (job.actions.why) buttons.push(el('small', { class: 'muted', text: job.actions.why }));
  const name = el('th', { scope: 'row' }, [job.name]);
  if (job.kind === 'run-once') name.appendChild(el('small', { class: 'muted kind', text: ' @RunOnce ' + (job.method ?? '') }));
  return el('tr', { 'data-job': job.name, 'data-kind': job.kind }, [
    name,
    cell(el('span', { title: job.schedule.expression, text: job.schedule.words })),
    cell(job.schedule.timeZone),
    cell(job.nextDue.length ? el('span', { title: job.nextDue.map(when).join('\n'), text: when(job.nextDue[0]) }) : null),
    cell(when(job.lastSuccessAt)),
    outcomeCell(job),
    healthCell(job),
    el('td', { class: 'actions' }, buttons),
  ]);
};

const pages = keysetPages({
  path: 'jobs',
  form: 'job-filters',
  first: 'jobs-first',
  next: 'jobs-next',
  fields: ['q'],
  load: (path) =>
    api<JobsAnswer>(path).then(newest('jobs', renderJobs), (error: unknown) => {
      say('Jobs: ' + messageOf(error), true);
    }),
});

function renderJobs(answer: JobsAnswer): void {
  jobs = answer.jobs;
  pages.answered(answer.nextCursor);
  const depth = pages.depth();
  const { total, pageSize } = answer;
  const pageCount = Math.max(1, Math.ceil(total / pageSize));
  const matching = pages.searching() ? ' match' : '';
  byId('jobs-page', HTMLElement).textContent =
    total > jobs.length || depth ? `page ${depth + 1} of ${pageCount} (${total} jobs${matching}, ${pageSize} a page)` : '';
  const content = jobs.length
    ? table(['Job', 'Schedule', 'Time zone', 'Next due', 'Last success', 'Last outcome', 'Health', 'Actions'], jobs.map(jobRow))
    : el('p', { class: 'muted', text: pages.searching() ? 'No job matches.' : depth ? 'No more jobs.' : 'No declared jobs.' });
  replaceContent(byId('jobs', HTMLElement), content);
  renderFailing(answer.failing, answer.failingTotal);
  offerChoices(
    [...jobs, ...answer.failing].map((job) => ({ key: 'job:' + job.name, label: job.name })),
    [...jobs, ...answer.failing].map((job) => job.name),
    true,
  );
}

/** The page the reader is on, again (a refresh). */
export const loadJobs = (): Promise<void> => pages.reload();

/** The search form (its first page) and the First / Next page buttons. */
export const wireJobs = (): void => pages.wire();
