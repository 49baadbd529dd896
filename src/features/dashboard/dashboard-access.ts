import { randomBytes, timingSafeEqual } from 'node:crypto';
import { ForbiddenException } from '@nestjs/common';
import type { DashboardAction, DashboardRequest, ResolvedDashboardOptions } from './dashboard.options';

/**
 * CSRF: a double-submit token. The page sets it in an HttpOnly, SameSite=Strict cookie scoped to
 * the dashboard's path and writes it in a <meta> tag; the page's script sends it back in the
 * X-Dashboard-Csrf header of every action, which must equal the cookie. Another site can neither
 * read the page (no CORS) nor make a browser send that header, and SameSite=Strict keeps the cookie
 * off its requests anyway.
 */
export const CSRF_COOKIE = 'sdcorejs-dashboard-csrf';
export const CSRF_HEADER = 'x-dashboard-csrf';
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

const header = (request: DashboardRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** The token of the request's CSRF cookie, if it has a well-formed one. */
export const csrfCookieOf = (request: DashboardRequest): string | undefined => {
  for (const part of (header(request, 'cookie') ?? '').split(';')) {
    const [name, value] = part.trim().split('=');
    if (name === CSRF_COOKIE && value !== undefined && TOKEN.test(value)) return value;
  }
  return undefined;
};

export const newCsrfToken = (): string => randomBytes(32).toString('base64url');

/** The Set-Cookie value of a token, for the dashboard's path only; Secure when the request came over https. */
export const csrfCookie = (token: string, path: string, request: DashboardRequest & { protocol?: string; secure?: boolean }): string => {
  const https = request.secure === true || request.protocol === 'https' || header(request, 'x-forwarded-proto') === 'https';
  return `${CSRF_COOKIE}=${token}; Path=${path}; HttpOnly; SameSite=Strict${https ? '; Secure' : ''}`;
};

const sameToken = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** An action must carry the page's token in its header, equal to its cookie. 403 otherwise. */
export const checkCsrf = (request: DashboardRequest): void => {
  const cookie = csrfCookieOf(request);
  const sent = header(request, CSRF_HEADER);
  if (!cookie || !sent || !sameToken(cookie, sent)) throw new ForbiddenException('Missing or wrong CSRF token: reload the dashboard page');
};

/** Who is asking, per `authorize`; 403 when it says false (or anything but a name). */
export const authorizeRequest = async (options: ResolvedDashboardOptions, request: DashboardRequest, action: DashboardAction): Promise<string> => {
  const actor = await options.authorize(request, action);
  if (typeof actor !== 'string' || actor.trim() === '') throw new ForbiddenException();
  return actor;
};
