// The dynamic schedules (shown only when the application has some): the first 100 by id, with
// the same actions as a job.

import { action } from './actions';
import { api } from './api';
import type { Schedule, SchedulesPage } from './api-types';
import { offerChoices } from './choices';
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
    el('td', { class: 'actions' }, [
      action('Run now', path + 'run-now'),
      schedule.enabled ? action('Pause', path + 'pause', 'Pause the schedule ' + schedule.id + ' on every instance?') : action('Resume', path + 'resume'),
      el('button', { type: 'button', text: 'Timeline', onclick: () => showTimeline('schedule:' + schedule.id) }),
    ]),
  ]);
};

const renderSchedules = (page: SchedulesPage): void => {
  byId('schedules-section', HTMLElement).hidden = page.schedules.length === 0;
  const target = byId('schedules', HTMLElement);
  replaceContent(target, table(['Id', 'Handler', 'Schedule', 'Time zone', 'Next due', 'State', 'Tenant', 'Actions'], page.schedules.map(scheduleRow)));
  if (page.nextCursor) target.appendChild(el('p', { class: 'muted', text: 'The first 100 schedules (by id) are shown.' }));
  // The first job's timeline is shown at first; the first schedule's only when there is no job.
  offerChoices(
    page.schedules.map((schedule) => ({ key: 'schedule:' + schedule.id, label: schedule.id + ' (' + schedule.handler + ')' })),
    page.schedules.map((schedule) => schedule.handler),
    declaredJobs().length === 0,
  );
};

export const loadSchedules = (): Promise<void> =>
  api<SchedulesPage>('schedules').then(renderSchedules, (error: unknown) => {
    say('Schedules: ' + messageOf(error), true);
  });
