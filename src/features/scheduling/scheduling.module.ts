import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ScheduledJobsExplorer } from './scheduled-jobs.explorer';
import { ScheduledJobsService } from './scheduled-jobs.service';
import { SCHEDULING_OPTIONS_TYPE, SchedulingConfigurableModule } from './scheduling.module-definition';

/**
 * Runs the providers declared with @Scheduled, once per occurrence across every instance,
 * with JobSchedulerService as the lock. Import JobSchedulerModule (global) too.
 *
 * SchedulingModule.forRoot({ settings: { 'billing.export-ledger': { enabled: false } } })
 */
@Module({
  imports: [DiscoveryModule],
  providers: [ScheduledJobsExplorer, ScheduledJobsService],
  exports: [ScheduledJobsService],
})
export class SchedulingModule extends SchedulingConfigurableModule {
  /** Every option has a default: `SchedulingModule.forRoot()` is the usual registration. */
  static override forRoot(options: typeof SCHEDULING_OPTIONS_TYPE = {}): DynamicModule {
    return super.forRoot(options);
  }
}
