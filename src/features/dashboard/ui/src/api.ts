// The page's only way out: the dashboard's JSON API on its own origin, below the base path the
// server wrote into the page. Actions (POST) carry the page's CSRF token in a header.

const meta = (name: string): string => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';

const base = meta('dashboard-base').replace(/\/+$/, '');
const csrf = meta('dashboard-csrf');

export interface ApiOptions {
  method?: 'GET' | 'POST';
}

const messageIn = (body: unknown): string | undefined => {
  if (typeof body !== 'object' || body === null || !('message' in body)) return undefined;
  return body.message ? String(body.message) : undefined;
};

/** The answer's JSON; an error "status: message" when the answer is not a success or not JSON. */
export const api = async <T>(path: string, options: ApiOptions = {}): Promise<T> => {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (method !== 'GET') headers['X-Dashboard-Csrf'] = csrf;
  const response = await fetch(base + '/api/' + path, { method, headers, credentials: 'same-origin' });
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new Error(response.status + ': ' + response.statusText);
  }
  if (!response.ok) throw new Error(response.status + ': ' + (messageIn(body) ?? response.statusText));
  return body as T;
};

/** Answers that arrive after a newer request's are dropped (a refresh must not undo a filter). */
const latest = { runs: 0, timeline: 0, schedules: 0, jobs: 0 };

export const newest = <T>(kind: keyof typeof latest, handle: (value: T) => void): ((value: T) => void) => {
  const ticket = ++latest[kind];
  return (value) => {
    if (ticket === latest[kind]) handle(value);
  };
};
