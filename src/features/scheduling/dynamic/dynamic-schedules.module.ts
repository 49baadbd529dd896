import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { DynamicSchedules } from './dynamic-schedules.service';
import { DYNAMIC_SCHEDULES_OPTIONS_TYPE, DynamicSchedulesConfigurableModule } from './dynamic-schedules.module-definition';

/**
 * Schedules created at runtime (DynamicSchedules), stored in PostgreSQL ("job-schedule", migration
 * CreateJobScheduleTable1764547200007) and run by the providers decorated with @ScheduleHandler,
 * once per occurrence across every instance. Import JobSchedulerModule (global) too.
 *
 * DynamicSchedulesModule.forRoot()
 */
@Module({
  imports: [DiscoveryModule],
  providers: [DynamicSchedules],
  exports: [DynamicSchedules],
})
export class DynamicSchedulesModule extends DynamicSchedulesConfigurableModule {
  /** Every option has a default: `DynamicSchedulesModule.forRoot()` is the usual registration. */
  static override forRoot(options: typeof DYNAMIC_SCHEDULES_OPTIONS_TYPE = {}): DynamicModule {
    return super.forRoot(options);
  }
}
