// The action buttons (run now, pause, resume, release): confirm when asked, POST, say how it went,
// then let the page refresh (main.ts says how, so that no view imports the page's wiring).

import { api } from './api';
import type { ActionAnswer } from './api-types';
import { el } from './dom';
import { messageOf, say } from './status';

let afterAction: () => void = () => undefined;

/** What to do after every action, done or failed: main.ts refreshes the page. */
export const onActionDone = (then: () => void): void => {
  afterAction = then;
};

/** A button that POSTs `path` below the API, after `confirmText` is confirmed when there is one. */
export const action = (label: string, path: string, confirmText?: string): HTMLButtonElement =>
  el('button', {
    type: 'button',
    text: label,
    onclick: () => {
      if (confirmText && !window.confirm(confirmText)) return;
      say(label + '…');
      api<ActionAnswer>(path, { method: 'POST' }).then(
        (result) => {
          say(label + ': ' + (result.applied === false ? 'nothing to do' : 'done'));
          afterAction();
        },
        (error: unknown) => {
          say(label + ' failed: ' + messageOf(error), true);
          afterAction();
        },
      );
    },
  });
