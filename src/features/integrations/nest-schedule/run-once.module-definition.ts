import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RunOnceModuleOptions } from './run-once.types';

export const {
  ConfigurableModuleClass: RunOnceConfigurableModule,
  MODULE_OPTIONS_TOKEN: RUN_ONCE_MODULE_OPTIONS,
  OPTIONS_TYPE: RUN_ONCE_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RunOnceModuleOptions>({ moduleName: 'RunOnce' }).setClassMethodName('forRoot').build();
