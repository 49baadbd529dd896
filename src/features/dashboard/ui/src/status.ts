// The status line at the top of the page (role=status): what was done, or what failed.

import { byId } from './dom';

export const say = (text: string, isError = false): void => {
  const status = byId('status', HTMLElement);
  status.textContent = text;
  status.className = isError ? 'error' : '';
};

/** An error's message, whatever was thrown. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
