import 'reflect-metadata';
import { type DynamicModule, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { TypeOrmModule } from '@nestjs/typeorm';
import { type DynamicScheduleExecution, DynamicSchedulesModule, JobScheduler, JobSchedulerModule, ScheduleHandler } from '../../src/features';
import { onWireStatement } from './wire-statements';

/**
 * One instance of the dynamic-schedules scenario, in a process of its own: a Nest application
 * with one @ScheduleHandler doing `workMs` of (asynchronous) work, running the schedules stored in
 * the database. It prints one JSON line once booted and one with its figures once `measureUntil`
 * has passed, then exits.
 */
export interface DynamicWorkerArguments {
  url: string;
  nodeId: string;
  workMs: number;
  changePollMs: number;
  /** Runs due in [measureFrom, measureUntil) are measured; statements and CPU from windowFrom (their claims go out ahead). */
  measureFrom: number;
  windowFrom: number;
  measureUntil: number;
  poolSize: number;
  /** DynamicSchedulesModule's claimAheadMs (its default when absent). */
  claimAheadMs?: number;
}

export type DynamicWorkerLine =
  | { kind: 'booted'; nodeId: string; bootStatements: number; bootMs: number; heapBytes: number | null; heapBeforeBytes: number | null }
  | {
      kind: 'figures';
      nodeId: string;
      startDelaysMs: number[];
      windowStatements: number;
      /** Statements on the schedules' table in the window, and how many of them were change polls. */
      windowScheduleStatements: number;
      windowPolls: number;
      /** complete / fail statements in the window: for many runs at once (completeMany, failMany), and for one run alone. */
      windowFinalizesBatched: number;
      windowFinalizesAlone: number;
      windowCpuMicros: number;
      /** Time in garbage collection in the window, all of it and young-generation (scavenge) only. */
      windowGcMs: number;
      windowScavengeMs: number;
      windowMs: number;
      /** The claim statements (acquireMany) sent before the measured instant, each its send time (ms after the instant: negative). */
      claimSentMs: number[];
    };

/** A gc entry's kind (minor, major, incremental, weak callbacks). */
const gcKindOf = (entry: PerformanceEntry): number | undefined => (entry.detail as { kind?: number } | null | undefined)?.kind;

const print = (line: DynamicWorkerLine): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

const main = async (): Promise<void> => {
  const options = JSON.parse(process.argv[2]) as DynamicWorkerArguments;
  const delays: number[] = [];
  let statements = 0;
  let scheduleStatements = 0;
  let polls = 0;
  const finalizes = { batched: 0, alone: 0 };
  const claimSentMs: number[] = [];
  onWireStatement((statement) => {
    statements++;
    if (statement.text.includes('AS k("lockKey", "runKey", "code", "name", "leaseMs", "ownerToken")')) {
      const sentAt = Date.now();
      if (sentAt >= options.windowFrom && sentAt < options.measureFrom) claimSentMs.push(sentAt - options.measureFrom);
    }
    if (statement.text.includes('"job-schedule"')) scheduleStatements++;
    if (statement.text.includes('"version" > $1')) polls++;
    if (/SET "status" = '(SUCCESS|FAIL)'/.test(statement.text)) {
      if (statement.text.includes('unnest(')) finalizes.batched++;
      else finalizes.alone++;
    }
  });

  @ScheduleHandler('bench.tenant-task')
  class TenantTask {
    async run(execution: DynamicScheduleExecution): Promise<void> {
      const due = execution.scheduledAt.getTime();
      if (due >= options.measureFrom && due < options.measureUntil) delays.push(Date.now() - due);
      await new Promise((resolve) => setTimeout(resolve, options.workMs));
    }
  }
  @Module({ providers: [TenantTask] })
  class HandlersModule {}
  class DynamicRootModule {}
  const root: DynamicModule = {
    module: DynamicRootModule,
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url: options.url, entities: [JobScheduler], poolSize: options.poolSize }),
      JobSchedulerModule.forRoot({ nodeId: options.nodeId }),
      DynamicSchedulesModule.forRoot({ metrics: false, retention: false, changePollMs: options.changePollMs, claimAheadMs: options.claimAheadMs }),
      HandlersModule,
    ],
  };
  // Heap after a full collection (run with --expose-gc; null without it).
  const heap = (): number | null => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) return null;
    gc();
    return process.memoryUsage().heapUsed;
  };
  const heapBeforeBytes = heap();
  const bootStarted = performance.now();
  const app = await NestFactory.createApplicationContext(root, { logger: ['error', 'warn'] });
  const bootMs = performance.now() - bootStarted;
  const bootStatements = statements;
  // No statement here: at 100,000 schedules the instances booted first are busy with an earlier instant.
  print({ kind: 'booted', nodeId: options.nodeId, bootStatements, bootMs, heapBytes: heap(), heapBeforeBytes });

  await new Promise((resolve) => setTimeout(resolve, Math.max(0, options.windowFrom - Date.now())));
  const before = { statements, scheduleStatements, polls, ...finalizes, cpu: process.cpuUsage(), at: Date.now() };
  const gc = { all: 0, scavenge: 0 };
  const collections = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.all += entry.duration;
      if (gcKindOf(entry) === constants.NODE_PERFORMANCE_GC_MINOR) gc.scavenge += entry.duration;
    }
  });
  collections.observe({ entryTypes: ['gc'] });
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, options.measureUntil - Date.now())));
  const cpu = process.cpuUsage(before.cpu);
  collections.disconnect();
  const figures: DynamicWorkerLine = {
    kind: 'figures',
    nodeId: options.nodeId,
    startDelaysMs: delays,
    windowStatements: statements - before.statements,
    windowScheduleStatements: scheduleStatements - before.scheduleStatements,
    windowPolls: polls - before.polls,
    windowFinalizesBatched: finalizes.batched - before.batched,
    windowFinalizesAlone: finalizes.alone - before.alone,
    windowCpuMicros: cpu.user + cpu.system,
    windowGcMs: gc.all,
    windowScavengeMs: gc.scavenge,
    windowMs: Date.now() - before.at,
    claimSentMs,
  };
  await app.close();
  print(figures);
};

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
