import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The page's static files: the sources in ui/, copied next to the compiled module at package build time. */
export interface DashboardAssets {
  html: string;
  script: string;
  style: string;
}

const UI_DIRECTORY = join(__dirname, 'ui');

/** Read once, when the module is set up. */
export const loadDashboardAssets = (directory = UI_DIRECTORY): DashboardAssets => ({
  html: readFileSync(join(directory, 'dashboard.html'), 'utf8'),
  script: readFileSync(join(directory, 'dashboard.js'), 'utf8'),
  style: readFileSync(join(directory, 'dashboard.css'), 'utf8'),
});

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (character) => HTML_ESCAPES[character]);

/** The page with its base path and CSRF token filled in (both escaped). */
export const renderDashboardPage = (html: string, base: string, csrfToken: string): string =>
  html.replace(/\{\{base\}\}/g, escapeHtml(base)).replace(/\{\{csrf\}\}/g, escapeHtml(csrfToken));

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
