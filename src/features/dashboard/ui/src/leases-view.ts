// The leases running past their lease (their holder stopped heartbeating or overran): each can be
// released, fenced by the token it was shown with.

import { action } from './actions';
import { api } from './api';
import type { ExpiredLease, LeasesAnswer } from './api-types';
import { byId, cell, el, replaceContent, table } from './dom';
import { age, runKeyText } from './format';
import { messageOf, say } from './status';

const leaseRow = (lease: ExpiredLease): HTMLTableRowElement => {
  const path = 'runs/' + encodeURIComponent(lease.id) + '/release?fencingToken=' + encodeURIComponent(String(lease.fencingToken));
  return el('tr', { 'data-lease': lease.id }, [
    cell(lease.code),
    cell(runKeyText(lease.runKey)),
    cell(lease.ownerId),
    cell(age(lease.heartbeatAgeMs)),
    cell(age(lease.overdueMs)),
    cell(String(lease.fencingToken)),
    el('td', { class: 'actions' }, [
      action('Release', path, 'Release the lease of ' + lease.code + ' (fencing token ' + lease.fencingToken + ')? Its run is recorded failed.'),
    ]),
  ]);
};

export const loadLeases = (): Promise<void> =>
  api<LeasesAnswer>('leases/expired').then(
    (body) => {
      const rows = body.leases.map(leaseRow);
      const content = rows.length
        ? table(['Job', 'Run key', 'Owner', 'Heartbeat age', 'Past its lease by', 'Fencing token', 'Actions'], rows)
        : el('p', { class: 'muted', text: 'None.' });
      replaceContent(byId('leases', HTMLElement), content);
    },
    (error: unknown) => {
      say('Leases: ' + messageOf(error), true);
    },
  );
