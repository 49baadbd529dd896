// The file the worker schematic writes (valid TypeScript, type-checked here).

export const workerFile = (): string => `import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';

/**
 * The process that runs the scheduled jobs: the API's modules, no HTTP server. Start it with
 * RUN_JOBS unset (or true) and the API (main.ts) with RUN_JOBS=false. Keep the lease on even
 * with one worker: a rolling deployment runs two for a while.
 */
async function bootstrap(): Promise<void> {
  if (process.env.RUN_JOBS === 'false') {
    throw new Error('RUN_JOBS=false: this worker would run no job. Set RUN_JOBS=false for the API process only.');
  }
  const app = await NestFactory.createApplicationContext(AppModule);
  // SIGTERM / SIGINT close the context: running jobs' signals abort, then their leases are released.
  app.enableShutdownHooks();
  new Logger('Worker').log('Running the scheduled jobs (no HTTP server)');
}

void bootstrap();
`;

/** The line the worker schematic puts above the API's bootstrap. */
export const MAIN_NOTE = '// The API process: start it with RUN_JOBS=false; the jobs run in worker.ts (npm run start:worker).';
