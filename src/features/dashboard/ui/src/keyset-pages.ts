// A list paged by a keyset cursor (the jobs, the dynamic schedules): the search applied, the
// cursors of the pages walked through and the next page's, the search form (a search starts at
// the first page) and the First page / Next page buttons. Each list gives its API path, its form's
// fields and how it loads a page.

import { byId } from './dom';

export interface KeysetPagesOptions {
  /** The list's API path, without a query. */
  path: string;
  /** Ids of the search form and of the First page / Next page buttons. */
  form: string;
  first: string;
  next: string;
  /** The search form's fields, as the API's query parameters. */
  fields: readonly string[];
  /** Loads a page: its API path, search and cursor included. */
  load: (path: string) => Promise<void>;
}

export interface KeysetPages {
  /** How many pages come before the one shown. */
  depth(): number;
  /** Whether a search is applied. */
  searching(): boolean;
  /** Takes an answer's next cursor: Next page is enabled with one. */
  answered(nextCursor: string | null): void;
  /** The page shown, again (a refresh). */
  reload(): Promise<void>;
  /** Wires the search form and the buttons (once, when the page is ready). */
  wire(): void;
}

export const keysetPages = (options: KeysetPagesOptions): KeysetPages => {
  let query: Record<string, string> = {};
  let cursors: string[] = [];
  let nextCursor: string | null = null;

  const pathOf = (cursor: string | undefined): string => {
    const parts: string[] = [];
    for (const [name, value] of Object.entries(query)) if (value) parts.push(name + '=' + encodeURIComponent(value));
    if (cursor) parts.push('after=' + encodeURIComponent(cursor));
    return options.path + (parts.length ? '?' + parts.join('&') : '');
  };
  const loadAt = (cursor?: string): Promise<void> => options.load(pathOf(cursor));

  return {
    depth: () => cursors.length,
    searching: () => Object.values(query).some((value) => value !== ''),
    answered: (cursor) => {
      nextCursor = cursor;
      byId(options.next, HTMLButtonElement).disabled = !cursor;
    },
    reload: () => loadAt(cursors[cursors.length - 1]),
    wire: () => {
      const form = byId(options.form, HTMLFormElement);
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        const value = (name: string): string => {
          const field = form.elements.namedItem(name);
          return field instanceof HTMLInputElement ? field.value.trim() : '';
        };
        query = Object.fromEntries(options.fields.map((name) => [name, value(name)]));
        cursors = [];
        void loadAt();
      });
      byId(options.next, HTMLButtonElement).addEventListener('click', () => {
        if (!nextCursor) return;
        cursors.push(nextCursor);
        void loadAt(nextCursor);
      });
      byId(options.first, HTMLButtonElement).addEventListener('click', () => {
        cursors = [];
        void loadAt();
      });
    },
  };
};
