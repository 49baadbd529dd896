import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { type DynamicModule, type INestApplication, Module, UnauthorizedException } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  DynamicSchedulesModule,
  type JobExecution,
  JobScheduler,
  JobSchedulerModule,
  RunOnce,
  RunOnceModule,
  Scheduled,
  ScheduledJobsService,
  ScheduleHandler,
  SchedulingModule,
} from '../../../src/features';
import { type DashboardAction, type DashboardActionEntry, type DashboardRequest, JobSchedulerDashboardModule } from '../../../src/features/dashboard';
import type { TestDatabase } from '../../support/test-database';

/** Who may do what in these tests: a reader reads, an operator also acts, anyone else gets 401. */
export const READER = 'Bearer reader-secret';
export const OPERATOR = 'Bearer operator-secret';

export const testAuthorize = (request: DashboardRequest, action: DashboardAction): string | false => {
  const credential = request.headers.authorization;
  if (credential === OPERATOR) return 'olga the operator';
  if (credential === READER) return action === 'read' ? 'rita the reader' : false;
  throw new UnauthorizedException();
};

/** Runs of the every-second job, per application name. */
export const ticks: { node: string; scheduledAt: Date }[] = [];

export class NodeLabel {
  constructor(readonly name: string) {}
}

@Scheduled('reports.hourly-digest', { cron: '0 * * * *', timeZone: 'Europe/Paris' })
export class HourlyDigestJob {
  async run(): Promise<void> {}
}

@Scheduled('billing.every-second', { every: '1s' })
export class EverySecondJob {
  constructor(private readonly label: NodeLabel) {}
  async run(execution: JobExecution): Promise<void> {
    ticks.push({ node: this.label.name, scheduledAt: execution.scheduledAt });
  }
}

@Scheduled('billing.quarter-hour', { cron: '*/15 * * * *' })
export class QuarterHourJob {
  async run(): Promise<void> {}
}

/** A @RunOnce method (ScheduleModule with cronJobs: false: its cron never fires; its runs are seeded). */
export class NightlyExport {
  @Cron('0 0 3 * * *', { timeZone: 'UTC' })
  @RunOnce('reports.nightly-export')
  async export(): Promise<void> {}
}

@ScheduleHandler('reports.tenant-export')
export class TenantExportHandler {
  async run(): Promise<void> {}
}

export interface DashboardApp {
  app: INestApplication;
  url: string;
  scheduled: ScheduledJobsService;
  actions: DashboardActionEntry[];
  close(): Promise<void>;
}

export interface DashboardAppOptions {
  adapter?: 'express' | 'fastify';
  globalPrefix?: string;
  path?: string;
  name?: string;
  pausePollMs?: number;
  /** Start the jobs' timers (default true). */
  start?: boolean;
  /** Also DynamicSchedulesModule, with a handler (its timers always start). */
  dynamic?: boolean;
  /** Also RunOnceModule, with a @RunOnce method. */
  runOnce?: boolean;
}

/** A Nest HTTP application on 127.0.0.1 (a free port) with the lease, the declared jobs above and the dashboard. */
export const startDashboardApp = async (database: TestDatabase, options: DashboardAppOptions = {}): Promise<DashboardApp> => {
  const actions: DashboardActionEntry[] = [];
  @Module({ providers: [HourlyDigestJob, EverySecondJob, QuarterHourJob, { provide: NodeLabel, useValue: new NodeLabel(options.name ?? 'a') }] })
  class JobsModule {}
  class DashboardTestModule {}
  const root: DynamicModule = {
    module: DashboardTestModule,
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url: database.url, entities: [JobScheduler], poolSize: 4 }),
      JobSchedulerModule.forRoot({ nodeId: `dashboard-${options.name ?? 'a'}` }),
      SchedulingModule.forRoot({ metrics: false, retention: false, start: options.start, pauses: { pollMs: options.pausePollMs ?? 200 } }),
      JobsModule,
      ...(options.dynamic
        ? [
            DynamicSchedulesModule.forRoot({ metrics: false, retention: false, changePollMs: 200 }),
            { module: class DynamicHandlers {}, providers: [TenantExportHandler] },
          ]
        : []),
      ...(options.runOnce
        ? [
            ScheduleModule.forRoot({ cronJobs: false }),
            RunOnceModule.forRoot({ retention: false }),
            { module: class RunOnceMethods {}, providers: [NightlyExport] },
          ]
        : []),
      JobSchedulerDashboardModule.forRoot({ path: options.path ?? '/jobs', authorize: testAuthorize, onAction: (entry) => actions.push(entry) }),
    ],
  };
  const adapter = options.adapter === 'fastify' ? new FastifyAdapter() : new ExpressAdapter();
  const app = await NestFactory.create<INestApplication>(root, adapter, { logger: false, abortOnError: false });
  if (options.globalPrefix) app.setGlobalPrefix(options.globalPrefix);
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return { app, url, scheduled: app.get(ScheduledJobsService), actions, close: () => app.close() };
};

/** A seeded row of the lease table: a scheduled occurrence (or a runNow run) of `code`. */
export interface SeededRun {
  code: string;
  runKey: string;
  status: 'RUNNING' | 'SUCCESS' | 'FAIL';
  attempts?: number;
  data?: unknown;
  /** How long ago the holder last wrote (RUNNING rows), in ms. */
  heartbeatAgoMs?: number;
  leaseMs?: number;
}

/** Inserts rows as the lease writes them (each with an owner token: the tests look for it everywhere). */
export const seedRuns = async (database: TestDatabase, runs: readonly SeededRun[]): Promise<{ id: string; ownerToken: string; fencingToken: string }[]> => {
  const inserted: { id: string; ownerToken: string; fencingToken: string }[] = [];
  for (const run of runs) {
    const ownerToken = randomUUID();
    const [row] = await database.sql<{ id: string; fencingToken: string }>(
      `INSERT INTO "job-scheduler" ("lockKey", code, name, type, status, "ownerToken", "runKey", "leaseMs", "ownerId", "fencingToken", attempts,
         data, "startedAt", "finishedAt", "createdAt", "modifiedAt")
       VALUES ($1, $2, $2, 'SCHEDULE', $3::text::"job-scheduler_status_enum", $4, $5, $6, 'seed-node:1', nextval('"job-scheduler_fencingToken_seq"'), $7, $8::jsonb,
         now() - interval '1 minute', CASE WHEN $3::text = 'RUNNING' THEN NULL ELSE now() END, now() - interval '1 minute',
         now() - $9::int * interval '1 millisecond')
       RETURNING id, "fencingToken"::text AS "fencingToken"`,
      [
        `seed:${run.code}:${run.runKey}`,
        run.code,
        run.status,
        ownerToken,
        run.runKey,
        run.leaseMs ?? 60_000,
        run.attempts ?? 1,
        run.data === undefined ? null : JSON.stringify(run.data),
        run.heartbeatAgoMs ?? 0,
      ],
    );
    inserted.push({ id: row.id, ownerToken, fencingToken: row.fencingToken });
  }
  return inserted;
};

/** An HTTP call to the app: status, body text, parsed JSON when it is some, and headers. */
export const call = async (app: DashboardApp, path: string, init: { method?: string; headers?: Record<string, string> } = {}) => {
  const response = await fetch(`${app.url}${path}`, { method: init.method ?? 'GET', headers: init.headers, redirect: 'manual' });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json, headers: response.headers };
};

/** The page's CSRF cookie and token, as a browser gets them from the page. */
export const csrfFrom = async (app: DashboardApp, pagePath: string, authorization = OPERATOR): Promise<Record<string, string>> => {
  const page = await call(app, pagePath, { headers: { authorization } });
  const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0];
  const token = /name="dashboard-csrf" content="([^"]+)"/.exec(page.text)?.[1] ?? '';
  return { authorization, cookie, 'x-dashboard-csrf': token };
};
