import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ScheduledJobsExplorer } from './scheduled-jobs.explorer';
import { ScheduledJobsService } from './scheduled-jobs.service';
import { SchedulingConfigurableModule } from './scheduling.module-definition';

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
export class SchedulingModule extends SchedulingConfigurableModule {}
