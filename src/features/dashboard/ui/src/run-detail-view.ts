// The run dialog: every field of one run, its data and its last error, opened from a timeline
// mark or from the runs list.

import { api } from './api';
import type { RunDetail } from './api-types';
import { byId, el } from './dom';
import { age, when } from './format';
import { messageOf, say } from './status';

const fieldsOf = (run: RunDetail): Array<[string, string | null]> => [
  ['Id', run.id],
  ['Job', run.code],
  ['Status', run.status],
  ['Run key', run.runKey],
  ['Attempts', String(run.attempts)],
  ['Fencing token', String(run.fencingToken)],
  ['Owner', run.ownerId],
  ['Lease', run.leaseMs === null ? null : run.leaseMs + ' ms'],
  ['Created', when(run.createdAt)],
  ['Started', when(run.startedAt)],
  ['Finished', when(run.finishedAt)],
  ['Last write', when(run.modifiedAt) + ' (' + age(run.heartbeatAgeMs) + ' ago)'],
];

export const showRun = (id: string): void => {
  api<RunDetail>('runs/' + encodeURIComponent(id)).then(
    (run) => {
      const fields = byId('run-detail-fields', HTMLElement);
      fields.textContent = '';
      for (const [term, value] of fieldsOf(run)) {
        fields.appendChild(el('dt', { text: term }));
        fields.appendChild(el('dd', { text: value === null || value === undefined ? '—' : value }));
      }
      byId('run-detail-data', HTMLElement).textContent = JSON.stringify(run.data, null, 2);
      byId('run-detail-error', HTMLElement).textContent = JSON.stringify(run.lastError, null, 2);
      byId('run-detail', HTMLDialogElement).showModal();
    },
    (error: unknown) => {
      say('Run: ' + messageOf(error), true);
    },
  );
};

/** The dialog's close button. */
export const wireRunDetail = (): void => {
  byId('run-detail-close', HTMLButtonElement).addEventListener('click', () => {
    byId('run-detail', HTMLDialogElement).close();
  });
};
