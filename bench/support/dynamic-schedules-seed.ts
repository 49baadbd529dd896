import { type DynamicModule, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { type DynamicScheduleInput, DynamicSchedules, DynamicSchedulesModule, JobScheduler, JobSchedulerModule, ScheduleHandler } from '../../src/features';
import { countWireStatements } from './wire-statements';

/** The handler the scenario's schedules name; it never runs in the seeding application (start: false). */
export const SEEDED_HANDLER = 'bench.tenant-task';

/** The scenario's schedules: `tenant-000001/task` ... every `everyMs`, with their tenant and a little data. */
export const seededSchedule = (n: number, everyMs: number): DynamicScheduleInput => ({
  id: `tenant-${String(n).padStart(6, '0')}/task`,
  handler: SEEDED_HANDLER,
  every: everyMs,
  data: { n },
  tenantId: `tenant-${n}`,
});

/**
 * Writes `count` schedules the way an application imports them: DynamicSchedules.upsertMany on
 * an application that does not run them (start: false). The time and the statements it took
 * (the application's boot excluded).
 */
export const seedDynamicSchedules = async (url: string, count: number, everyMs: number): Promise<{ ms: number; statements: number }> => {
  @ScheduleHandler(SEEDED_HANDLER)
  class SeededTask {
    run(): void {}
  }
  @Module({ providers: [SeededTask] })
  class SeedHandlersModule {}
  class SeedRootModule {}
  const root: DynamicModule = {
    module: SeedRootModule,
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url, entities: [JobScheduler], poolSize: 2 }),
      JobSchedulerModule.forRoot({ nodeId: 'seed' }),
      DynamicSchedulesModule.forRoot({ start: false, metrics: false, retention: false }),
      SeedHandlersModule,
    ],
  };
  const app = await NestFactory.createApplicationContext(root, { logger: ['error', 'warn'] });
  try {
    const inputs = Array.from({ length: count }, (_, index) => seededSchedule(index + 1, everyMs));
    const started = performance.now();
    const { statements } = await countWireStatements(() => app.get(DynamicSchedules).upsertMany(inputs));
    return { ms: performance.now() - started, statements };
  } finally {
    await app.close();
  }
};
