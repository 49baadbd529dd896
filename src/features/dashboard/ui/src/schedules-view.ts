// The dynamic schedules (shown only when the application has some): searchable by id prefix,
// handler and tenant, 100 a page in id order (keyset paging), with their last outcome and health
// (the jobs' health cell) and the same actions as a job.

import { action } from './actions';
import { api, newest } from './api';
import type { Schedule, SchedulesPage } from './api-types';
import { offerChoices } from './choices';
import { healthCell, outcomeCell } from './health';
import { byId, cell, el, replaceContent, table } from './dom';
import { when } from './format';
import { declaredJobs } from './jobs-view';
import { keysetPages } from './keyset-pages';
import { messageOf, say } from './status';
import { showTimeline } from './timeline-view';

const scheduleRow = (schedule: Schedule): HTMLTableRowElement => {
  const path = 'schedules/' + encodeURIComponent(schedule.id) + '/';
  return el('tr', { 'data-schedule': schedule.id }, [
    el('th', { scope: 'row', text: schedule.id }),
    cell(schedule.handler),
    cell(el('span', { title: schedule.schedule.expression, text: schedule.schedule.words })),
    cell(schedule.schedule.timeZone),
    cell(schedule.nextDue.length ? el('span', { title: schedule.nextDue.map(when).join('\n'), text: when(schedule.nextDue[0]) }) : null),
    el('td', {}, [el('span', { class: 'badge health-' + (schedule.enabled ? 'ok' : 'disabled'), text: schedule.enabled ? 'enabled' : 'disabled' })]),
    cell(schedule.tenantId),
    outcomeCell(schedule),
    healthCell(schedule),
    el('td', { class: 'actions' }, [
      action('Run now', path + 'run-now'),
      schedule.enabled ? action('Pause', path + 'pause', 'Pause the schedule ' + schedule.id + ' on every instance?') : action('Resume', path + 'resume'),
      el('button', { type: 'button', text: 'Timeline', onclick: () => showTimeline('schedule:' + schedule.id) }),
    ]),
  ]);
};

/** Whether any schedule was ever listed (the section stays hidden in an application without any). */
let everShown = false;

const pages = keysetPages({
  path: 'schedules',
  form: 'schedule-filters',
  first: 'schedules-first',
  next: 'schedules-next',
  fields: ['q', 'handler', 'tenant'],
  load: (path) =>
    api<SchedulesPage>(path).then(newest('schedules', renderSchedules), (error: unknown) => {
      say('Schedules: ' + messageOf(error), true);
    }),
});

function renderSchedules(page: SchedulesPage): void {
  everShown ||= page.schedules.length > 0;
  byId('schedules-section', HTMLElement).hidden = !everShown && !pages.searching();
  pages.answered(page.nextCursor);
  byId('schedules-page', HTMLElement).textContent = 'page ' + (pages.depth() + 1) + ' (100 a page, by id)' + (pages.searching() ? ', filtered' : '');
  const target = byId('schedules', HTMLElement);
  replaceContent(
    target,
    page.schedules.length
      ? table(['Id', 'Handler', 'Schedule', 'Time zone', 'Next due', 'State', 'Tenant', 'Last outcome', 'Health', 'Actions'], page.schedules.map(scheduleRow))
      : el('p', { class: 'muted', text: 'No schedule matches.' }),
  );
  // The first job's timeline is shown at first; the first schedule's only when there is no job.
  offerChoices(
    page.schedules.map((schedule) => ({ key: 'schedule:' + schedule.id, label: schedule.id + ' (' + schedule.handler + ')' })),
    page.schedules.map((schedule) => schedule.handler),
    declaredJobs().length === 0,
  );
}

/** The page the reader is on, again (a refresh). */
export const loadSchedules = (): Promise<void> => pages.reload();

/** The search form (its first page) and the First / Next page buttons: keyset paging by id. */
export const wireSchedules = (): void => pages.wire();
