import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ScheduledJobsExplorer } from './scheduled-jobs.explorer';
import { ScheduledJobsService } from './scheduled-jobs.service';
import { ModuleRegistrations } from '../job-scheduler/module-registrations';
import { SCHEDULING_OPTIONS_TYPE, SchedulingConfigurableModule } from './scheduling.module-definition';

const registrations = new ModuleRegistrations();

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
  /**
   * Every option has a default: `SchedulingModule.forRoot()` is the usual registration. Imported
   * by several modules with the same options, it is one module (one scheduler); with different
   * options, the boot fails naming the options that differ.
   */
  static override forRoot(options: typeof SCHEDULING_OPTIONS_TYPE = {}): DynamicModule {
    return registrations.once(options, () => super.forRoot(options));
  }
}
