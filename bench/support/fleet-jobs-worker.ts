import 'reflect-metadata';
import { type DynamicModule, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { type JobExecution, JobScheduler, JobSchedulerModule, Scheduled, SchedulingModule } from '../../src/features';
import { onWireStatement } from './wire-statements';
import { DEFAULT_CLAIM_AHEAD_MS } from '../../src/features/scheduling/scheduled-jobs.service';

/**
 * One instance of the fleet-jobs scenario, in a process of its own: a Nest application with
 * `jobs` declared jobs due every `everyMs`, on its own pool. It prints one JSON line when it has
 * booted and one with its figures once `measureUntil` (epoch ms) has passed, then exits.
 *
 * Arguments (JSON in argv[2]): { url, nodeId, jobs, every, measureFrom, measureUntil, poolSize }.
 */
export interface FleetWorkerArguments {
  url: string;
  nodeId: string;
  jobs: number;
  /** As `@Scheduled({ every })` takes it, e.g. '10s'. */
  every: string;
  /** Runs due in [measureFrom, measureUntil) are measured; earlier ones warm up. */
  measureFrom: number;
  measureUntil: number;
  poolSize: number;
  /** SchedulingModule's claimAheadMs (undefined: its default). */
  claimAheadMs?: number;
}

export type FleetWorkerLine =
  | { kind: 'booted'; nodeId: string; bootStatements: number; historyStatements: number; bootMs: number }
  | {
      kind: 'figures';
      nodeId: string;
      /** Start delay (handler entered − due instant) of every measured run this instance ran, ms. */
      startDelaysMs: number[];
      /** Statements sent while the measured window was open. */
      windowStatements: number;
      /** Node CPU (user + system) while the window was open, µs. */
      windowCpuMicros: number;
    };

/** Counts the statements the instance's driver sends (all of them, whoever asks). */
class StatementTally {
  count = 0;
  history = 0;
  constructor() {
    onWireStatement((statement) => {
      this.count++;
      if (statement.text.includes('CROSS JOIN LATERAL')) this.history++;
    });
  }
}

const print = (line: FleetWorkerLine): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

const main = async (): Promise<void> => {
  const options = JSON.parse(process.argv[2]) as FleetWorkerArguments;
  const delays: number[] = [];
  const jobs: Type[] = Array.from({ length: options.jobs }, (_, index) => {
    @Scheduled(`fleet.job-${String(index).padStart(5, '0')}`, { every: options.every })
    class FleetJob {
      run(execution: JobExecution): void {
        const due = execution.scheduledAt.getTime();
        if (due >= options.measureFrom && due < options.measureUntil) delays.push(Date.now() - due);
      }
    }
    return FleetJob;
  });
  @Module({ providers: jobs })
  class JobsModule {}
  const logger = new StatementTally();
  class FleetRootModule {}
  const root: DynamicModule = {
    module: FleetRootModule,
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url: options.url, entities: [JobScheduler], poolSize: options.poolSize }),
      JobSchedulerModule.forRoot({ nodeId: options.nodeId }),
      SchedulingModule.forRoot({ metrics: false, retention: false, claimAheadMs: options.claimAheadMs }),
      JobsModule,
    ],
  };
  const bootStarted = performance.now();
  const app = await NestFactory.createApplicationContext(root, { logger: ['error', 'warn'] });
  print({ kind: 'booted', nodeId: options.nodeId, bootStatements: logger.count, historyStatements: logger.history, bootMs: performance.now() - bootStarted });

  // From before the first measured instant's claims (claimAheadMs ahead of it).
  const windowFrom = options.measureFrom - ((options.claimAheadMs ?? DEFAULT_CLAIM_AHEAD_MS) + 500);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, windowFrom - Date.now())));
  const statementsBefore = logger.count;
  const cpuBefore = process.cpuUsage();
  // Past the window's last due instant, plus time for its runs to finish everywhere.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, options.measureUntil - Date.now())));
  const cpu = process.cpuUsage(cpuBefore);
  const windowStatements = logger.count - statementsBefore;
  await app.close();
  print({ kind: 'figures', nodeId: options.nodeId, startDelaysMs: delays, windowStatements, windowCpuMicros: cpu.user + cpu.system });
};

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
