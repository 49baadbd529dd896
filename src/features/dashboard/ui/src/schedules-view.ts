// The dynamic schedules (shown only when the application has some): searchable by id prefix,
// handler and tenant, 100 a page in id order (keyset paging), with their last outcome and health
// (the jobs' health cell) and the same actions as a job.

import { action } from './actions';
import { api, newest } from './api';
import type { Schedule, SchedulesPage } from './api-types';
import { offerChoices } from './choices';
import { healthCell } from './health';
import { byId, cell, el, replaceContent, table } from './dom';
import { when } from './format';
import { declaredJobs } from './jobs-view';
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
    cell(
      schedule.lastOutcome
        ? el('span', { class: 'outcome outcome-' + schedule.lastOutcome, title: 'last success ' + when(schedule.lastSuccessAt), text: schedule.lastOutcome })
        : null,
    ),
    healthCell(schedule),
    el('td', { class: 'actions' }, [
      action('Run now', path + 'run-now'),
      schedule.enabled ? action('Pause', path + 'pause', 'Pause the schedule ' + schedule.id + ' on every instance?') : action('Resume', path + 'resume'),
      el('button', { type: 'button', text: 'Timeline', onclick: () => showTimeline('schedule:' + schedule.id) }),
    ]),
  ]);
};

/** The search applied, the cursors of the pages walked through, and the next page's. */
const state: { query: Record<string, string>; cursors: string[]; nextCursor: string | null; everShown: boolean } = {
  query: {},
  cursors: [],
  nextCursor: null,
  everShown: false,
};

const searching = (): boolean => Object.values(state.query).some((value) => value !== '');

const renderSchedules = (page: SchedulesPage): void => {
  state.everShown ||= page.schedules.length > 0;
  byId('schedules-section', HTMLElement).hidden = !state.everShown && !searching();
  state.nextCursor = page.nextCursor;
  byId('schedules-next', HTMLButtonElement).disabled = !page.nextCursor;
  byId('schedules-page', HTMLElement).textContent = 'page ' + (state.cursors.length + 1) + ' (100 a page, by id)' + (searching() ? ', filtered' : '');
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
};

const schedulesPath = (cursor: string | undefined): string => {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(state.query)) if (value) parts.push(name + '=' + encodeURIComponent(value));
  if (cursor) parts.push('after=' + encodeURIComponent(cursor));
  return 'schedules' + (parts.length ? '?' + parts.join('&') : '');
};

const loadPage = (cursor?: string): Promise<void> =>
  api<SchedulesPage>(schedulesPath(cursor)).then(newest('schedules', renderSchedules), (error: unknown) => {
    say('Schedules: ' + messageOf(error), true);
  });

/** The page the reader is on, again (a refresh). */
export const loadSchedules = (): Promise<void> => loadPage(state.cursors[state.cursors.length - 1]);

/** The search form (its first page) and the First / Next page buttons: keyset paging by id. */
export const wireSchedules = (): void => {
  const form = byId('schedule-filters', HTMLFormElement);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = (name: string): string => {
      const field = form.elements.namedItem(name);
      return field instanceof HTMLInputElement ? field.value.trim() : '';
    };
    state.query = { q: value('q'), handler: value('handler'), tenant: value('tenant') };
    state.cursors = [];
    void loadPage();
  });
  byId('schedules-next', HTMLButtonElement).addEventListener('click', () => {
    if (!state.nextCursor) return;
    state.cursors.push(state.nextCursor);
    void loadPage(state.nextCursor);
  });
  byId('schedules-first', HTMLButtonElement).addEventListener('click', () => {
    state.cursors = [];
    void loadPage();
  });
};
