import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The page's static files. In the package, ui/ next to the compiled module holds all three, built
 * at package build time (scripts/build-dashboard.mjs: the script bundled by esbuild from the typed
 * sources in ui/src). Run from src/ (tests, `npm run demo`), ui/ holds the sources: the script is
 * bundled from them once, when the module is set up, so it is never stale.
 */
export interface DashboardAssets {
  html: string;
  script: string;
  style: string;
}

const UI_DIRECTORY = join(__dirname, 'ui');

/**
 * The script bundled from ui/src by the repository's build script (esbuild, a devDependency), in a
 * process of its own, once per process: only a checkout runs this, never the package (which has
 * no ui/src).
 */
const bundled = new Map<string, string>();
const bundleFromSources = (directory: string): string => {
  let script = bundled.get(directory);
  if (script === undefined) {
    script = execFileSync(process.execPath, [join(directory, '..', '..', '..', '..', 'scripts', 'build-dashboard.mjs'), '--stdout'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    bundled.set(directory, script);
  }
  return script;
};

/** Read once, when the module is set up. */
export const loadDashboardAssets = (directory = UI_DIRECTORY): DashboardAssets => ({
  html: readFileSync(join(directory, 'dashboard.html'), 'utf8'),
  script: existsSync(join(directory, 'src', 'main.ts')) ? bundleFromSources(directory) : readFileSync(join(directory, 'dashboard.js'), 'utf8'),
  style: readFileSync(join(directory, 'dashboard.css'), 'utf8'),
});

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (character) => HTML_ESCAPES[character]);

/** The page with its base path and CSRF token filled in (both escaped). */
export const renderDashboardPage = (html: string, base: string, csrfToken: string): string =>
  html.replace(/\{\{base\}\}/g, escapeHtml(base)).replace(/\{\{csrf\}\}/g, escapeHtml(csrfToken));

/** Whether a request comes from a browser asking for a page (Accept names text/html). */
export const acceptsHtml = (request: { headers: Record<string, string | string[] | undefined> }): boolean => {
  const accept = request.headers.accept;
  return (Array.isArray(accept) ? accept.join(',') : (accept ?? '')).includes('text/html');
};

/** The short page a browser gets instead of the dashboard without a session (401) or the right to read (403). No data, no script. */
export const refusedPage = (status: number): string =>
  [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8" /><meta name="viewport" content="width=device-width, initial-scale=1" />',
    `<title>${status === 401 ? 'Sign in needed' : 'Not allowed'}: scheduled jobs</title></head>`,
    `<body><h1>${status === 401 ? 'Sign in needed' : 'Not allowed'}</h1>`,
    status === 401
      ? '<p>This dashboard needs you to be signed in (its <code>authorize</code> function did not recognise this request). Sign in, then load this page again.</p>'
      : '<p>You are signed in, but not allowed to read this dashboard. Ask its operators for access.</p>',
    `<p>HTTP ${status}</p></body></html>`,
  ].join('\n');

/**
 * The page's Content-Security-Policy: its own script and stylesheet only (no inline script or
 * style, no eval), requests to its own origin only, no frames, no forms, no plugins.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers on every response of the dashboard. */
export const COMMON_HEADERS: ReadonlyArray<[string, string]> = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
  ['X-Frame-Options', 'DENY'],
  ['Cache-Control', 'no-store'],
  ['Content-Security-Policy', PAGE_CSP],
];
