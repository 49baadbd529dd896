import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { JobSchedulerHealthIndicator } from '@sdcorejs/nestjs/features/health';

// Down when PostgreSQL does not answer, when more than 5 leases are past their lease,
// or when a declared job had no success for two of its intervals.
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly jobs: JobSchedulerHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.jobs.isHealthy('jobs', { maxExpiredLeases: 5 })]);
  }
}
