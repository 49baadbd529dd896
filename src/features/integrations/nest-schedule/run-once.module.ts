import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { RunOnceExplorer } from './run-once.explorer';
import { ModuleRegistrations } from '../../job-scheduler/module-registrations';
import { RunOnceConfigurableModule, RUN_ONCE_OPTIONS_TYPE } from './run-once.module-definition';

const registrations = new ModuleRegistrations();

/**
 * Makes every @RunOnce method of the application (a @nestjs/schedule @Cron) run on one instance
 * per tick, with JobSchedulerService as the lock. Import it once, next to ScheduleModule and
 * JobSchedulerModule:
 *
 *   imports: [ScheduleModule.forRoot(), JobSchedulerModule.forRoot(), RunOnceModule.forRoot()]
 */
@Module({
  imports: [DiscoveryModule],
  providers: [RunOnceExplorer],
})
export class RunOnceModule extends RunOnceConfigurableModule {
  /** Imported by several modules with the same options, it is one module; with different options, the boot fails naming them. */
  static override forRoot(options: typeof RUN_ONCE_OPTIONS_TYPE = {}): DynamicModule {
    return registrations.once(options, () => super.forRoot(options));
  }
}
