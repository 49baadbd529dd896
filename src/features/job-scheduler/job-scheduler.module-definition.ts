import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { JobSchedulerModuleExtras, JobSchedulerRuntimeOptions } from './job-scheduler.options';

export const {
  ConfigurableModuleClass: JobSchedulerConfigurableModule,
  MODULE_OPTIONS_TOKEN: JOB_SCHEDULER_MODULE_OPTIONS,
  OPTIONS_TYPE: JOB_SCHEDULER_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: JOB_SCHEDULER_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<JobSchedulerRuntimeOptions>({ moduleName: 'JobScheduler' })
  .setClassMethodName('forRoot')
  .setExtras<JobSchedulerModuleExtras>({ global: true }, (definition, extras) => ({
    ...definition,
    global: extras.global ?? true,
  }))
  .build();
