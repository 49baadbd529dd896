import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { type JobExecution, JobScheduler, JobSchedulerModule, Scheduled, SchedulingModule } from '../../../src/features';
import { type StartNodes, type StopNodes, stopAll } from '../peer-schedulers';
import { runPeersWorker } from '../peers-worker';

/** Nodes of ours started in this process: their DataSource names must differ across cases too. */
let oursNodes = 0;

/** Ours: @Scheduled jobs in a Nest application per node, SchedulingModule and JobSchedulerModule with their defaults. */
const startNodes: StartNodes = async (options) => {
  const providers = options.jobs.map((job) => {
    @Scheduled(`peers.${job}`, { cron: options.cron })
    class PeerJob {
      run(execution: JobExecution): void {
        options.onRun(job, execution.scheduledAt.getTime());
      }
    }
    return PeerJob;
  });
  @Module({ providers })
  class PeerJobsModule {}
  const stops: StopNodes[] = [];
  for (let count = 0; count < options.nodes; count++) {
    const index = oursNodes++;
    class PeerRootModule {}
    const app = await NestFactory.createApplicationContext(
      {
        module: PeerRootModule,
        imports: [
          // Named: several applications in one process must not share TypeORM's registry entry.
          TypeOrmModule.forRoot({ name: `ours-${index}`, type: 'postgres', url: options.url, entities: [JobScheduler], poolSize: options.poolSize }),
          JobSchedulerModule.forRoot({ nodeId: `ours-${index}`, dataSource: `ours-${index}` }),
          SchedulingModule.forRoot(),
          PeerJobsModule,
        ],
      },
      { logger: ['error', 'warn'] },
    );
    stops.push(() => app.close());
  }
  return stopAll(stops);
};

runPeersWorker(startNodes);
