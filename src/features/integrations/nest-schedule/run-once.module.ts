import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { RunOnceExplorer } from './run-once.explorer';
import { RunOnceConfigurableModule, RUN_ONCE_OPTIONS_TYPE } from './run-once.module-definition';

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
  static override forRoot(options: typeof RUN_ONCE_OPTIONS_TYPE = {}) {
    return super.forRoot(options);
  }
}
