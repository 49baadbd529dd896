import { Logger, run } from 'graphile-worker';
import { Pool } from 'pg';
import { type StartNodes, type StopNodes, stopAll } from '../peer-schedulers';
import { runPeersWorker } from '../peers-worker';

/** graphile-worker 0.17: run() per node with the crontab (one line per job, its own id and job_key). */
const startNodes: StartNodes = async (options) => {
  const logger = new Logger(() => (level, message) => {
    if (level === 'error' || level === 'warning') process.stderr.write(`graphile-worker ${level}: ${message}\n`);
  });
  const crontab = options.jobs.map((job) => `${options.cron} peers_job ?id=${job.replace(/-/g, '_')}&jobKey=${job} ${JSON.stringify({ job })}`).join('\n');
  const stops: StopNodes[] = [];
  for (let index = 0; index < options.nodes; index++) {
    const pool = new Pool({ connectionString: options.url, max: options.poolSize });
    const report = (error: Error) => process.stderr.write(`graphile-worker node ${index} pool: ${error.message}\n`);
    pool.on('error', report);
    pool.on('connect', (client) => client.on('error', report));
    const runner = await run({
      pgPool: pool,
      crontab,
      logger,
      noHandleSignals: true,
      taskList: {
        peers_job: async (payload) => {
          const { job, _cron: cron } = payload as { job: string; _cron: { ts: string } };
          options.onRun(job, Date.parse(cron.ts));
        },
      },
    });
    stops.push(async () => {
      await runner.stop();
      await pool.end();
    });
  }
  return stopAll(stops);
};

runPeersWorker(startNodes);
