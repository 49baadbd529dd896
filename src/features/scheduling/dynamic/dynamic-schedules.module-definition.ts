import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { DynamicSchedulesModuleOptions } from './dynamic-schedule.types';

export const {
  ConfigurableModuleClass: DynamicSchedulesConfigurableModule,
  MODULE_OPTIONS_TOKEN: DYNAMIC_SCHEDULES_MODULE_OPTIONS,
  OPTIONS_TYPE: DYNAMIC_SCHEDULES_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: DYNAMIC_SCHEDULES_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DynamicSchedulesModuleOptions>({ moduleName: 'DynamicSchedules' })
  .setClassMethodName('forRoot')
  .setExtras({ global: true }, (definition, extras) => ({ ...definition, global: extras.global }))
  .build();
