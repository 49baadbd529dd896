import { Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { compileSchedule, type JobDeclaration } from './schedule/job-declaration';
import { scheduledJobOf } from './scheduled.decorator';
import { schedulingErrors } from './scheduling.errors';
import type { JobSettings, ScheduledJob } from './scheduling.types';
import type { EngineJob } from './job-schedule-engine';

/** Finds the providers declared with @Scheduled and applies their settings. */
@Injectable()
export class ScheduledJobsExplorer {
  constructor(private readonly discovery: DiscoveryService) {}

  /**
   * How many instances of `type` the application holds: more than one scheduler (or lease) means
   * its module was imported twice with different options.
   */
  countInstances(type: abstract new (...args: never[]) => unknown): number {
    const instances = new Set(
      this.discovery
        .getProviders()
        .map((wrapper): unknown => wrapper.instance)
        .filter((instance) => instance instanceof type),
    );
    return instances.size;
  }

  explore(settings: Record<string, JobSettings> = {}): EngineJob[] {
    const found = new Map<string, { declaration: JobDeclaration; instance: ScheduledJob; className: string }>();
    for (const wrapper of this.discovery.getProviders()) {
      const declaration = scheduledJobOf(wrapper.metatype);
      if (!declaration || !wrapper.instance || found.get(declaration.name)?.instance === wrapper.instance) continue;
      const className = (wrapper.metatype as { name: string }).name;
      const previous = found.get(declaration.name);
      if (previous) throw schedulingErrors.duplicate(declaration.name, previous.className, className);
      const instance = wrapper.instance as ScheduledJob;
      if (typeof instance.run !== 'function') throw schedulingErrors.notAJob(declaration.name, className);
      found.set(declaration.name, { declaration, instance, className });
    }
    for (const name of Object.keys(settings)) if (!found.has(name)) throw schedulingErrors.unknownSetting(name);

    return [...found.values()].map(({ declaration, instance }) => {
      const setting = settings[declaration.name] ?? {};
      const schedule = setting.schedule === undefined ? declaration.schedule : compileSchedule(declaration.name, setting.schedule);
      return {
        declaration: { ...declaration, schedule },
        handler: (execution) => instance.run(execution),
        enabled: setting.enabled ?? true,
      };
    });
  }
}
