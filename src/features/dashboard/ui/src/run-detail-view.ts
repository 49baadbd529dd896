// The run dialog: every field of one run (due, claimed, the handler's start and finish apart), its
// error, its data and why a previous owner lost it, opened from a timeline mark, a bucket or the
// runs list.

import { api } from './api';
import type { RunDetail } from './api-types';
import { byId, el } from './dom';
import { age, runKeyText, when } from './format';
import { messageOf, say } from './status';

const fieldsOf = (run: RunDetail): Array<[string, string | null]> => [
  ['Id', run.id],
  ['Job', run.code],
  ['Status', run.status + (run.outcome ? ' (' + run.outcome + ')' : '')],
  ['Run key', runKeyText(run.runKey)],
  ['Attempts', String(run.attempts)],
  ['Fencing token', String(run.fencingToken)],
  ['Owner', run.ownerId],
  ['Lease', run.leaseMs === null ? null : run.leaseMs + ' ms'],
  ['Due', run.dueAt === null ? null : when(run.dueAt)],
  ['Claimed (lease acquired)', when(run.claimedAt)],
  [
    'Started (handler)',
    run.startedAt ? when(run.startedAt) : run.finishedAt ? 'not recorded (its data has no handlerMs: ended unrun, or not run by the scheduler)' : null,
  ],
  ['Finished', when(run.finishedAt)],
  ['Handler ran', run.startedAt && run.finishedAt ? age(Date.parse(run.finishedAt) - Date.parse(run.startedAt)) : null],
  ['Claim to finish', run.claimedAt && run.finishedAt ? age(Date.parse(run.finishedAt) - Date.parse(run.claimedAt)) : null],
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
      byId('run-detail-error', HTMLElement).textContent = run.error === null ? 'none' : JSON.stringify(run.error, null, 2);
      byId('run-detail-data', HTMLElement).textContent = JSON.stringify(run.data, null, 2);
      byId('run-detail-last-error', HTMLElement).textContent = run.lastError === null ? 'none' : JSON.stringify(run.lastError, null, 2);
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
