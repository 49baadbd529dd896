import { Controller, type DynamicModule, Module } from '@nestjs/common';
import { LibraryLogger } from '../job-scheduler/log-text';
import { loadDashboardAssets } from './dashboard-assets';
import { DASHBOARD_ASSETS, JobSchedulerDashboardController } from './dashboard.controller';
import { DASHBOARD_OPTIONS, type JobSchedulerDashboardOptions, resolveDashboardOptions } from './dashboard.options';
import { JobSchedulerDashboardSchedules } from './dashboard-schedules';
import { JobSchedulerDashboardService } from './dashboard.service';

/**
 * The operator dashboard, served by the application itself at `path` (below any global prefix),
 * under the Express and Fastify adapters: the declared jobs, each one's timeline, the runs, the
 * leases past their lease, and the actions run now / pause / resume / release.
 *
 * JobSchedulerDashboardModule.forRoot({ path: '/jobs', authorize: (request, action) => who | false })
 *
 * Needs JobSchedulerModule (global by default); shows declared jobs when SchedulingModule is
 * imported too. Refuses to start without `authorize` (see dangerouslyAllowEveryone).
 */
@Module({})
export class JobSchedulerDashboardModule {
  static forRoot(options: JobSchedulerDashboardOptions): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    if (options.dangerouslyAllowEveryone === 'local-development') {
      new LibraryLogger('JobSchedulerDashboard').warn(
        `The dashboard at ${resolved.path} lets EVERYONE who reaches this port read and act (dangerouslyAllowEveryone): for a developer's machine only`,
      );
    }
    // A controller of its own per forRoot, mounted at this path (Nest reads the path from the class).
    class MountedJobSchedulerDashboardController extends JobSchedulerDashboardController {}
    Controller(resolved.path)(MountedJobSchedulerDashboardController);
    return {
      module: JobSchedulerDashboardModule,
      controllers: [MountedJobSchedulerDashboardController],
      providers: [
        { provide: DASHBOARD_OPTIONS, useValue: resolved },
        { provide: DASHBOARD_ASSETS, useFactory: () => loadDashboardAssets() },
        JobSchedulerDashboardService,
        JobSchedulerDashboardSchedules,
      ],
    };
  }
}
