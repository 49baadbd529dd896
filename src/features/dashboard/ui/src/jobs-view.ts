// The jobs: declared (@Scheduled) and @RunOnce methods, with schedule in words, time zone, next
// due instants, last success, health, and the actions their kind has (run now, pause or resume;
// a @RunOnce method has neither, and says so), and the timeline.

import { action } from './actions';
import { api } from './api';
import type { Job, JobsAnswer } from './api-types';
import { renderFailing } from './attention-view';
import { offerChoices } from './choices';
import { healthCell } from './health';
import { byId, cell, el, replaceContent, table } from './dom';
import { when } from './format';
import { messageOf, say } from './status';
import { showTimeline } from './timeline-view';

/** The jobs of the last answer ([] until one arrives). */
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
    healthCell(job),
    el('td', { class: 'actions' }, buttons),
  ]);
};

const renderJobs = (answer: readonly Job[]): void => {
  jobs = answer;
  const content = jobs.length
    ? table(['Job', 'Schedule', 'Time zone', 'Next due', 'Last success', 'Health', 'Actions'], jobs.map(jobRow))
    : el('p', { class: 'muted', text: 'No declared jobs.' });
  replaceContent(byId('jobs', HTMLElement), content);
  renderFailing(jobs);
  offerChoices(
    jobs.map((job) => ({ key: 'job:' + job.name, label: job.name })),
    jobs.map((job) => job.name),
    true,
  );
};

export const loadJobs = (): Promise<void> =>
  api<JobsAnswer>('jobs').then(
    (body) => renderJobs(body.jobs),
    (error: unknown) => {
      say('Jobs: ' + messageOf(error), true);
    },
  );
