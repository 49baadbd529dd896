import 'reflect-metadata';
import { type DynamicModule, type INestApplication, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DynamicSchedulesModule, JobScheduler, JobSchedulerModule, SchedulingModule } from '../../src/features';
import { JobSchedulerDashboardModule } from '../../src/features/dashboard';
import type { TestDatabase } from '../../test/support/test-database';

/**
 * An Express app with the dashboard over `providers` (the jobs and handlers it declares), nothing
 * started; every request's server time (arrival to the response's end) is recorded under `label()`.
 */
export const startDashboardBenchApp = async (
  database: TestDatabase,
  providers: Type[],
  times: Map<string, number[]>,
  label: () => string,
): Promise<{ app: INestApplication; base: string }> => {
  @Module({ providers })
  class BenchJobs {}
  class DashboardBenchModule {}
  const root: DynamicModule = {
    module: DashboardBenchModule,
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url: database.url, entities: [JobScheduler], poolSize: 4 }),
      JobSchedulerModule.forRoot({ nodeId: 'dashboard-bench' }),
      SchedulingModule.forRoot({ start: false, metrics: false, retention: false }),
      DynamicSchedulesModule.forRoot({ start: false, metrics: false, retention: false }),
      BenchJobs,
      JobSchedulerDashboardModule.forRoot({ path: '/jobs', authorize: () => 'bench' }),
    ],
  };
  const app = await NestFactory.create<INestApplication>(root, new ExpressAdapter(), { logger: false });
  app.use((_request: unknown, response: { on(event: 'finish', listener: () => void): void }, next: () => void) => {
    const started = performance.now();
    const name = label();
    response.on('finish', () => {
      const list = times.get(name) ?? [];
      list.push(performance.now() - started);
      times.set(name, list);
    });
    next();
  });
  await app.listen(0, '127.0.0.1');
  return { app, base: `${(await app.getUrl()).replace('[::1]', '127.0.0.1')}/jobs` };
};

/** GET of a dashboard API path as JSON; throws on any status but 2xx. */
export const dashboardGetter =
  (base: string) =>
  async (path: string): Promise<unknown> => {
    const response = await fetch(`${base}${path}`);
    if (!response.ok) throw new Error(`dashboard bench: GET ${path} answered ${response.status}`);
    return response.json();
  };
