import { Controller, Get, Header } from '@nestjs/common';
import { register } from 'prom-client';

// The library's metrics (job_lease_*, scheduled_job_*) are in prom-client's default registry.
@Controller()
export class MetricsController {
  @Get('metrics')
  @Header('Content-Type', register.contentType)
  metrics(): Promise<string> {
    return register.metrics();
  }
}
