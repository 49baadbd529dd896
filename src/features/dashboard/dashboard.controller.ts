import {
  BadRequestException,
  ConflictException,
  Get,
  HttpCode,
  Inject,
  Injectable,
  NotFoundException,
  Param,
  Post,
  Query,
  Req,
  Res,
  UseFilters,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InvalidJobQueryOptionsError } from '../job-scheduler/job-scheduler.errors';
import { DeclarationError, SchedulingError } from '../scheduling/scheduling.errors';
import { authorizeRequest, checkCsrf, csrfCookie, csrfCookieOf, newCsrfToken } from './dashboard-access';
import { COMMON_HEADERS, type DashboardAssets, renderDashboardPage } from './dashboard-assets';
import { RefusedPageFilter } from './refused-page.filter';
import { fencingTokenOf, jobsQueryOf, type QueryValues, runFilterOf, scheduleQueryOf, timelineSpanOf } from './dashboard-query';
import { DASHBOARD_OPTIONS, type DashboardAction, type DashboardRequest, type ResolvedDashboardOptions } from './dashboard.options';
import { JobSchedulerDashboardSchedules } from './dashboard-schedules';
import { JobSchedulerDashboardService } from './dashboard.service';

export const DASHBOARD_ASSETS = Symbol('JOB_SCHEDULER_DASHBOARD_ASSETS');

/** Our typed errors as HTTP answers (their messages name no secret); anything else is Nest's 500. */
const asHttp = (error: unknown): unknown => {
  if (error instanceof InvalidJobQueryOptionsError || error instanceof DeclarationError) return new BadRequestException(error.message);
  if (error instanceof SchedulingError) return error.code === 'UNKNOWN_JOB' ? new NotFoundException(error.message) : new ConflictException(error.message);
  return error;
};

/**
 * The dashboard's routes, relative to its path (JobSchedulerDashboardModule mounts a subclass at
 * `path`): the page, its two assets, and the JSON API. Every request is authorized (`read`, or the
 * action); actions also need the page's CSRF token. Responses carry no-store, nosniff and the CSP.
 */
@Injectable()
export class JobSchedulerDashboardController {
  constructor(
    private readonly dashboard: JobSchedulerDashboardService,
    private readonly schedules: JobSchedulerDashboardSchedules,
    @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    @Inject(DASHBOARD_ASSETS) private readonly assets: DashboardAssets,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  @Get()
  @UseFilters(RefusedPageFilter)
  async page(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown): Promise<string> {
    await this.access(request, response, 'read');
    const adapter = this.adapterHost.httpAdapter;
    const base = String(adapter.getRequestUrl(request)).split('?')[0].replace(/\/+$/, '') || '/';
    const token = csrfCookieOf(request) ?? newCsrfToken();
    adapter.setHeader(response, 'Set-Cookie', csrfCookie(token, base, request));
    adapter.setHeader(response, 'Content-Type', 'text/html; charset=utf-8');
    return renderDashboardPage(this.assets.html, base, token);
  }

  @Get('assets/dashboard.js')
  async script(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown): Promise<string> {
    await this.access(request, response, 'read');
    this.adapterHost.httpAdapter.setHeader(response, 'Content-Type', 'text/javascript; charset=utf-8');
    return this.assets.script;
  }

  @Get('assets/dashboard.css')
  async style(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown): Promise<string> {
    await this.access(request, response, 'read');
    this.adapterHost.httpAdapter.setHeader(response, 'Content-Type', 'text/css; charset=utf-8');
    return this.assets.style;
  }

  @Get('api/jobs')
  async jobs(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Query() query: QueryValues) {
    await this.access(request, response, 'read');
    return this.answer(async () => ({ now: new Date().toISOString(), ...(await this.dashboard.jobs(jobsQueryOf(query))) }));
  }

  @Get('api/jobs/:name/timeline')
  async timeline(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Param('name') name: string, @Query() query: QueryValues) {
    await this.access(request, response, 'read');
    return this.answer(() => this.dashboard.timeline(name, timelineSpanOf(query).ms));
  }

  @Get('api/schedules')
  async dynamicSchedules(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Query() query: QueryValues) {
    await this.access(request, response, 'read');
    return this.answer(() => this.schedules.page(scheduleQueryOf(query)));
  }

  @Get('api/schedules/:id/timeline')
  async scheduleTimeline(
    @Req() request: DashboardRequest,
    @Res({ passthrough: true }) response: unknown,
    @Param('id') id: string,
    @Query() query: QueryValues,
  ) {
    await this.access(request, response, 'read');
    return this.answer(() => this.schedules.timeline(id, timelineSpanOf(query).ms));
  }

  @Post('api/schedules/:id/run-now')
  @HttpCode(200)
  async runScheduleNow(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Param('id') id: string) {
    const actor = await this.access(request, response, 'run-now');
    return this.answer(() => this.dashboard.runScheduleNow(id, actor));
  }

  @Post('api/schedules/:id/pause')
  @HttpCode(200)
  async pauseSchedule(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Param('id') id: string) {
    const actor = await this.access(request, response, 'pause');
    return this.answer(() => this.dashboard.setScheduleEnabled(id, false, actor));
  }

  @Post('api/schedules/:id/resume')
  @HttpCode(200)
  async resumeSchedule(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Param('id') id: string) {
    const actor = await this.access(request, response, 'resume');
    return this.answer(() => this.dashboard.setScheduleEnabled(id, true, actor));
  }

  @Get('api/runs')
  async runs(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Query() query: QueryValues) {
    await this.access(request, response, 'read');
    return this.answer(() => this.dashboard.runs(runFilterOf(query)));
  }

  @Get('api/runs/:id')
  async run(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Param('id') id: string) {
    await this.access(request, response, 'read');
    const run = await this.answer(() => this.dashboard.run(id));
    if (!run) throw new NotFoundException('No run has this id (pruned?)');
    return run;
  }

  @Get('api/leases/expired')
  async expiredLeases(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown) {
    await this.access(request, response, 'read');
    return { leases: await this.dashboard.expiredLeases() };
  }

  @Post('api/jobs/:name/run-now')
  @HttpCode(200)
  async runNow(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Param('name') name: string) {
    const actor = await this.access(request, response, 'run-now');
    return this.answer(() => this.dashboard.runNow(name, actor));
  }

  @Post('api/jobs/:name/pause')
  @HttpCode(200)
  async pause(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Param('name') name: string) {
    const actor = await this.access(request, response, 'pause');
    return this.answer(() => this.dashboard.pause(name, actor));
  }

  @Post('api/jobs/:name/resume')
  @HttpCode(200)
  async resume(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Param('name') name: string) {
    const actor = await this.access(request, response, 'resume');
    return this.answer(() => this.dashboard.resume(name, actor));
  }

  /** 409 when the lease changed (finished, or reclaimed with a new fencing token): nothing was released. */
  @Post('api/runs/:id/release')
  @HttpCode(200)
  async release(@Req() request: DashboardRequest, @Res({ passthrough: true }) response: unknown, @Param('id') id: string, @Query() query: QueryValues) {
    const actor = await this.access(request, response, 'release');
    const result = await this.answer(() => this.dashboard.release(id, fencingTokenOf(query), actor));
    if (!result.applied) throw new ConflictException('The lease changed (it finished, or was reclaimed with a new fencing token): nothing was released');
    return result;
  }

  /** Security headers, then CSRF for actions, then `authorize`: who is asking. */
  private async access(request: DashboardRequest, response: unknown, action: DashboardAction): Promise<string> {
    for (const [name, value] of COMMON_HEADERS) this.adapterHost.httpAdapter.setHeader(response, name, value);
    if (action !== 'read') checkCsrf(request);
    return authorizeRequest(this.options, request, action);
  }

  private async answer<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw asHttp(error);
    }
  }
}
