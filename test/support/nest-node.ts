import 'reflect-metadata';
import type { DynamicModule, INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule, type TypeOrmModuleOptions } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { JobScheduler, JobSchedulerModule, type JobSchedulerModuleOptions, JobSchedulerService } from '../../src/features';

export interface NestNode {
  app: INestApplicationContext;
  jobs: JobSchedulerService;
  dataSource: DataSource;
  close(): Promise<void>;
}

export interface NestNodeOptions {
  /** Options for JobSchedulerModule.forRoot; `dataSource` also names the TypeORM connection. */
  jobScheduler?: JobSchedulerModuleOptions;
  /** Use forRootAsync with a factory instead of forRoot. */
  async?: boolean;
  typeorm?: Partial<TypeOrmModuleOptions>;
  imports?: DynamicModule['imports'];
  providers?: DynamicModule['providers'];
}

/** One node: a Nest application context with its own TypeORM pool and the lease module. */
export const startNestNode = async (url: string, options: NestNodeOptions = {}): Promise<NestNode> => {
  const { dataSource: dataSourceName, global, ...runtime } = options.jobScheduler ?? {};
  const name = typeof dataSourceName === 'string' ? dataSourceName : undefined;
  const jobSchedulerModule = options.async
    ? JobSchedulerModule.forRootAsync({ global, dataSource: dataSourceName, useFactory: async () => runtime })
    : JobSchedulerModule.forRoot(options.jobScheduler ?? {});
  class TestRootModule {}
  const root: DynamicModule = {
    module: TestRootModule,
    imports: [
      TypeOrmModule.forRoot({
        type: 'postgres',
        url,
        entities: [JobScheduler],
        poolSize: 3,
        ...(name ? { name } : {}),
        ...options.typeorm,
      } as TypeOrmModuleOptions),
      jobSchedulerModule,
      ...(options.imports ?? []),
    ],
    providers: options.providers ?? [],
  };
  const app = await NestFactory.createApplicationContext(root, { logger: false, abortOnError: false });
  return {
    app,
    jobs: app.get(JobSchedulerService),
    dataSource: app.get<DataSource>(getDataSourceToken(name)),
    close: () => app.close(),
  };
};
