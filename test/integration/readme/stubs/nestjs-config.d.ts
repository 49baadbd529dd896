/**
 * The part of @nestjs/config the README examples use, for the README check only: this repository
 * does not depend on @nestjs/config. The check maps the module name to this file only when the
 * package is not installed (an installed @nestjs/config is always used instead).
 * Signatures copied from @nestjs/config 4 (lib/config.service.ts, lib/config.module.ts).
 */
import type { DynamicModule } from '@nestjs/common';

type ExcludeUndefinedIf<ExcludeUndefined extends boolean, T> = ExcludeUndefined extends true ? Exclude<T, undefined> : T | undefined;
type KeyOf<T> = keyof T extends never ? string : keyof T;

export declare class ConfigService<K = Record<string, unknown>, WasValidated extends boolean = false> {
  get<T = any>(propertyPath: KeyOf<K>): ExcludeUndefinedIf<WasValidated, T>;
  get<T = any>(propertyPath: KeyOf<K>, defaultValue: NoInfer<T>): T;
  getOrThrow<T = any>(propertyPath: KeyOf<K>): Exclude<T, undefined>;
  getOrThrow<T = any>(propertyPath: KeyOf<K>, defaultValue: NoInfer<T>): Exclude<T, undefined>;
}

export declare class ConfigModule {
  static forRoot(options?: { isGlobal?: boolean; envFilePath?: string | string[]; ignoreEnvFile?: boolean; cache?: boolean }): Promise<DynamicModule>;
}
