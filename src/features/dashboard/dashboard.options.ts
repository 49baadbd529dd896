import type { IncomingHttpHeaders } from 'node:http';

/** What a request to the dashboard does: `read` (the page, its assets and every GET of the API) or one action. */
export type DashboardAction = 'read' | 'run-now' | 'pause' | 'resume' | 'release';

/** The little every HTTP adapter's request has (Express's Request and Fastify's FastifyRequest both do). */
export interface DashboardRequest {
  headers: IncomingHttpHeaders;
}

/** One action done through the dashboard, with who did it (what `authorize` returned). */
export interface DashboardActionEntry {
  action: Exclude<DashboardAction, 'read'>;
  actor: string;
  /** The job name, or the run id for `release`. */
  target: string;
  /** Whether it applied (false: already paused / not paused / the lease changed). */
  applied: boolean;
  at: Date;
}

export interface JobSchedulerDashboardOptions {
  /** Where the page is mounted (below any global prefix). Default '/jobs'. */
  path?: string;
  /**
   * Called for every request with what it does: return who is asking (a user name or id, written
   * to the action log), or false to refuse it (403). Throw an HttpException (e.g.
   * UnauthorizedException) for another status. Reading and each action are asked separately.
   */
  authorize?(request: DashboardRequest, action: DashboardAction): string | false | Promise<string | false>;
  /**
   * The one way to run without `authorize`: anyone who reaches the port may read and act. For a
   * developer's own machine only: refused when NODE_ENV is 'production'.
   */
  dangerouslyAllowEveryone?: 'local-development';
  /** Called after each action (besides the log line), e.g. to keep an audit trail of your own. */
  onAction?(entry: DashboardActionEntry): void;
}

export const DASHBOARD_OPTIONS = Symbol('JOB_SCHEDULER_DASHBOARD_OPTIONS');

/** The options as validated: a path and an authorize function. */
export interface ResolvedDashboardOptions {
  path: string;
  authorize(request: DashboardRequest, action: DashboardAction): string | false | Promise<string | false>;
  onAction?(entry: DashboardActionEntry): void;
}

/** The dashboard's options are wrong: thrown by forRoot, before the application starts. */
export class InvalidDashboardOptionsError extends Error {
  readonly code = 'INVALID_DASHBOARD_OPTIONS';

  constructor(message: string) {
    super(message);
    this.name = 'InvalidDashboardOptionsError';
  }
}

/** Who acts when `dangerouslyAllowEveryone` is set. */
export const EVERYONE = 'everyone (dangerouslyAllowEveryone)';

const PATH = /^\/[A-Za-z0-9._~\-/]*$/;

/** Validates forRoot's options. Throws InvalidDashboardOptionsError. */
export const resolveDashboardOptions = (options: JobSchedulerDashboardOptions, nodeEnv = process.env.NODE_ENV): ResolvedDashboardOptions => {
  if (typeof options !== 'object' || options === null)
    throw new InvalidDashboardOptionsError('JobSchedulerDashboardModule.forRoot needs options with an authorize function');
  const path = options.path ?? '/jobs';
  if (typeof path !== 'string' || !PATH.test(path) || path.includes('//') || path.length > 200) {
    throw new InvalidDashboardOptionsError(`path must start with "/" and hold only letters, digits and . _ ~ - /, got ${JSON.stringify(String(path))}`);
  }
  const { authorize, dangerouslyAllowEveryone, onAction } = options;
  if (onAction !== undefined && typeof onAction !== 'function') throw new InvalidDashboardOptionsError('onAction must be a function');
  const normalized = path.length > 1 ? path.replace(/\/+$/, '') : path;
  if (typeof authorize === 'function') {
    if (dangerouslyAllowEveryone !== undefined) throw new InvalidDashboardOptionsError('give authorize or dangerouslyAllowEveryone, not both');
    return { path: normalized, authorize: (request, action) => authorize.call(options, request, action), onAction: onAction?.bind(options) };
  }
  if (authorize !== undefined) throw new InvalidDashboardOptionsError('authorize must be a function (request, action) => who | false');
  if (dangerouslyAllowEveryone !== 'local-development') {
    throw new InvalidDashboardOptionsError(
      "the dashboard has no open default: give authorize(request, action) => who | false (or, on a developer's machine only, dangerouslyAllowEveryone: 'local-development')",
    );
  }
  if (nodeEnv === 'production') throw new InvalidDashboardOptionsError("dangerouslyAllowEveryone is refused when NODE_ENV is 'production'");
  return { path: normalized, authorize: () => EVERYONE, onAction: onAction?.bind(options) };
};
