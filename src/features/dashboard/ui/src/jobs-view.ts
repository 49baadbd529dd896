// The jobs: declared (@Scheduled) and @RunOnce methods, with schedule in words, time zone, next
// due instants, last success, health, and the actions their kind has (run now, pause or resume;
// a @RunOnce method has neither, and says so), and the timeline. 50 a page (declared, then
// @RunOnce, by name; keyset paging), searchable by a part of the name; the failing jobs among all
// of them go to "Needs attention".

import { action } from './actions';
import { api, newest } from './api';
import type { Job, JobsAnswer } from './api-types';
import { renderFailing } from './attention-view';
import { offerChoices } from './choices';
import { healthCell } from './health';
import { byId, cell, el, replaceContent, table } from './dom';
import { when } from './format';
import { messageOf, say } from './status';
import { showTimeline } from './timeline-view';

/** The jobs of the last answer's page ([] until one arrives). */
let jobs: readonly Job[] = [];

/** The search applied, the cursors of the pages walked through, and the next page's. */
const state: { q: string; cursors: string[]; nextCursor: string | null } = { q: '', cursors: [], nextCursor: null };

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
    healthCell(job),
    el('td', { class: 'actions' }, buttons),
  ]);
};

const renderJobs = (answer: JobsAnswer): void => {
  jobs = answer.jobs;
  state.nextCursor = answer.nextCursor;
  byId('jobs-next', HTMLButtonElement).disabled = !answer.nextCursor;
  const first = state.cursors.length * 50;
  byId('jobs-page', HTMLElement).textContent =
    answer.total > jobs.length || state.cursors.length
      ? 'page ' +
        (state.cursors.length + 1) +
        ' of ' +
        Math.max(1, Math.ceil(answer.total / 50)) +
        ' (' +
        answer.total +
        ' jobs' +
        (state.q ? ' match' : '') +
        ', 50 a page)'
      : '';
  const content = jobs.length
    ? table(['Job', 'Schedule', 'Time zone', 'Next due', 'Last success', 'Health', 'Actions'], jobs.map(jobRow))
    : el('p', { class: 'muted', text: state.q ? 'No job matches.' : first ? 'No more jobs.' : 'No declared jobs.' });
  replaceContent(byId('jobs', HTMLElement), content);
  renderFailing(answer.failing, answer.failingTotal);
  offerChoices(
    [...jobs, ...answer.failing].map((job) => ({ key: 'job:' + job.name, label: job.name })),
    [...jobs, ...answer.failing].map((job) => job.name),
    true,
  );
};

const jobsPath = (cursor: string | undefined): string => {
  const parts: string[] = [];
  if (state.q) parts.push('q=' + encodeURIComponent(state.q));
  if (cursor) parts.push('after=' + encodeURIComponent(cursor));
  return 'jobs' + (parts.length ? '?' + parts.join('&') : '');
};

const loadPage = (cursor?: string): Promise<void> =>
  api<JobsAnswer>(jobsPath(cursor)).then(newest('jobs', renderJobs), (error: unknown) => {
    say('Jobs: ' + messageOf(error), true);
  });

/** The page the reader is on, again (a refresh). */
export const loadJobs = (): Promise<void> => loadPage(state.cursors[state.cursors.length - 1]);

/** The search form (its first page) and the First / Next page buttons. */
export const wireJobs = (): void => {
  const form = byId('job-filters', HTMLFormElement);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const field = form.elements.namedItem('q');
    state.q = field instanceof HTMLInputElement ? field.value.trim() : '';
    state.cursors = [];
    void loadPage();
  });
  byId('jobs-next', HTMLButtonElement).addEventListener('click', () => {
    if (!state.nextCursor) return;
    state.cursors.push(state.nextCursor);
    void loadPage(state.nextCursor);
  });
  byId('jobs-first', HTMLButtonElement).addEventListener('click', () => {
    state.cursors = [];
    void loadPage();
  });
};
