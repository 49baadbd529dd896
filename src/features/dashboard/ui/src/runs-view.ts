// The runs list: filtered by job, run key (the start of it, within a job), status and a time
// range, 50 a page, newest first, paged forward by cursor. A run's id opens its detail.

import { api, newest } from './api';
import type { RunSummary, RunsPage } from './api-types';
import { byId, cell, el, replaceContent, table } from './dom';
import { currentZone, runKeyText, when, zoneName } from './format';
import { showRun } from './run-detail-view';
import { messageOf, say } from './status';

export interface RunsFilter {
  code: string;
  runKey: string;
  status: string;
  from: string;
  to: string;
}

/** The filter applied; the cursors of the pages walked through (none: the first page); the next page's. */
const state: { filter: Partial<RunsFilter>; cursors: string[]; nextCursor: string | null } = { filter: {}, cursors: [], nextCursor: null };

const runsQuery = (cursor: string | undefined): string => {
  const parts = ['limit=50'];
  for (const [name, value] of Object.entries(state.filter)) {
    if (value) parts.push(name + '=' + encodeURIComponent(value));
  }
  if (cursor) parts.push('cursor=' + encodeURIComponent(cursor));
  return 'runs?' + parts.join('&');
};

const runRow = (run: RunSummary): HTMLTableRowElement =>
  el('tr', { 'data-run': run.id }, [
    el('td', {}, [el('button', { type: 'button', class: 'link', text: run.id.slice(0, 8), 'aria-label': 'Run ' + run.id, onclick: () => showRun(run.id) })]),
    cell(run.code),
    el('td', {}, [
      el('span', { class: 'badge status-' + run.status, text: run.status }),
      run.outcome ? el('small', { class: 'muted', text: ' ' + run.outcome }) : '',
      run.errorMessage ? el('div', { class: 'error-line', text: run.errorMessage }) : '',
    ]),
    cell(el('span', { title: run.runKey ?? '', text: runKeyText(run.runKey) ?? '—' })),
    cell(run.dueAt === null ? null : when(run.dueAt)),
    cell(when(run.claimedAt)),
    cell(when(run.startedAt)),
    cell(when(run.finishedAt)),
    cell(String(run.attempts)),
    cell(String(run.fencingToken)),
    cell(run.ownerId),
  ]);

const renderRuns = (page: RunsPage): void => {
  byId('runs-range-zone', HTMLElement).textContent = '(from / to in ' + zoneName() + ')';
  state.nextCursor = page.nextCursor;
  byId('runs-next', HTMLButtonElement).disabled = !page.nextCursor;
  const rows = page.runs.map(runRow);
  const content = rows.length
    ? table(['Run', 'Job', 'Status', 'Run key', 'Due', 'Claimed', 'Started', 'Finished', 'Attempts', 'Fencing token', 'Owner'], rows)
    : el('p', { class: 'muted', text: 'No runs match.' });
  replaceContent(byId('runs', HTMLElement), content);
};

const loadRuns = (cursor?: string): Promise<void> =>
  api<RunsPage>(runsQuery(cursor)).then(newest('runs', renderRuns), (error: unknown) => {
    say('Runs: ' + messageOf(error), true);
  });

/** The page the reader is on, again (a refresh). */
export const reloadRuns = (): Promise<void> => loadRuns(state.cursors[state.cursors.length - 1]);

/** The datetime-local value, a wall time of the zone the page shows, as an instant; empty stays empty. */
const isoOf = (wall: string): string => {
  if (!wall) return '';
  const instant = currentZone() === 'utc' ? new Date(wall + (wall.length === 16 ? ':00' : '') + 'Z') : new Date(wall);
  return Number.isNaN(instant.getTime()) ? '' : instant.toISOString();
};

const fieldValue = (form: HTMLFormElement, name: string): string => {
  const field = form.elements.namedItem(name);
  if (field instanceof HTMLInputElement || field instanceof HTMLSelectElement) return field.value;
  throw new Error(`#run-filters: no field ${name}`);
};

/** The filter form (Apply: its first page) and the First / Next page buttons. */
export const wireRuns = (): void => {
  const form = byId('run-filters', HTMLFormElement);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    state.filter = {
      code: fieldValue(form, 'code'),
      runKey: fieldValue(form, 'runKey').trim(),
      status: fieldValue(form, 'status'),
      from: isoOf(fieldValue(form, 'from')),
      to: isoOf(fieldValue(form, 'to')),
    };
    state.cursors = [];
    void loadRuns();
  });
  byId('runs-next', HTMLButtonElement).addEventListener('click', () => {
    if (!state.nextCursor) return;
    state.cursors.push(state.nextCursor);
    void loadRuns(state.nextCursor);
  });
  byId('runs-first', HTMLButtonElement).addEventListener('click', () => {
    state.cursors = [];
    void loadRuns();
  });
};
