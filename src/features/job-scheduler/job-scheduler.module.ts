import { type DynamicModule, Module } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { JOB_SCHEDULER_DATA_SOURCE } from './job-scheduler.constants';
import { JobScheduler } from './job-scheduler.entity';
import {
  JOB_SCHEDULER_ASYNC_OPTIONS_TYPE,
  JOB_SCHEDULER_MODULE_OPTIONS,
  JOB_SCHEDULER_OPTIONS_TYPE,
  JobSchedulerConfigurableModule,
} from './job-scheduler.module-definition';
import type { JobSchedulerModuleExtras } from './job-scheduler.options';
import { JobRetention } from './operations/job-retention';
import { JobRunsInspector } from './operations/job-runs.inspector';
import { JobSchedulerService } from './job-scheduler.service';
import { ModuleRegistrations } from './module-registrations';

const registrations = new ModuleRegistrations();

/** Wires the lease to a TypeORM DataSource: the default one, or the one named by `dataSource`. */
const withDataSource = (definition: DynamicModule, extras: JobSchedulerModuleExtras): DynamicModule => ({
  ...definition,
  imports: [...(definition.imports ?? []), TypeOrmModule.forFeature([JobScheduler], extras.dataSource)],
  providers: [...(definition.providers ?? []), { provide: JOB_SCHEDULER_DATA_SOURCE, useExisting: getDataSourceToken(extras.dataSource) }],
});

/**
 * `JobSchedulerModule.forRoot({ global: true })` or `forRootAsync({ useFactory, inject })`.
 * Requires TypeOrmModule.forRoot for the same DataSource, with the JobScheduler entity and its
 * table (see migrations/).
 */
@Module({
  providers: [JobSchedulerService, JobRunsInspector, JobRetention],
  // The DataSource and options tokens too: dynamic schedules keep their table next to the lease's.
  exports: [JobSchedulerService, JobRunsInspector, JobRetention, JOB_SCHEDULER_DATA_SOURCE, JOB_SCHEDULER_MODULE_OPTIONS],
})
export class JobSchedulerModule extends JobSchedulerConfigurableModule {
  /** Imported by several modules with the same options (extras included), it is one module; with different options, the boot fails naming them. */
  static override forRoot(options: typeof JOB_SCHEDULER_OPTIONS_TYPE = {}): DynamicModule {
    return registrations.once(options, () => withDataSource(super.forRoot(options), options));
  }

  static override forRootAsync(options: typeof JOB_SCHEDULER_ASYNC_OPTIONS_TYPE): DynamicModule {
    return registrations.once({ async: options }, () => withDataSource(super.forRootAsync(options), options));
  }
}
