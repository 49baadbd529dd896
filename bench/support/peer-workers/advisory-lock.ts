import { Cron } from 'croner';
import { Pool } from 'pg';
import type { StartNodes } from '../peer-schedulers';
import { runPeersWorker } from '../peers-worker';

const TRY_LOCK = 'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS "locked"';
const UNLOCK = 'SELECT pg_advisory_unlock(hashtextextended($1, 0)) AS "unlocked"';

/** The hand-rolled helper: a cron timer (croner) on every node, pg_try_advisory_lock around the handler. */
const startNodes: StartNodes = async (options) => {
  const pools = Array.from({ length: options.nodes }, () => new Pool({ connectionString: options.url, max: options.poolSize }));
  await Promise.all(pools.map(async (pool) => (await pool.connect()).release()));
  const runOnce = async (pool: Pool, job: string, instant: number): Promise<void> => {
    const key = `${job}:${instant}`;
    const client = await pool.connect();
    try {
      if ((await client.query<{ locked: boolean }>(TRY_LOCK, [key])).rows[0]?.locked !== true) return;
      try {
        options.onRun(job, instant);
      } finally {
        await client.query(UNLOCK, [key]);
      }
    } finally {
      client.release();
    }
  };
  const timers = pools.flatMap((pool) =>
    options.jobs.map(
      (job) =>
        new Cron(options.cron, { timezone: 'UTC' }, () => {
          const minute = Math.round(Date.now() / 60_000) * 60_000;
          void runOnce(pool, job, minute).catch((error: Error) => process.stderr.write(`advisory-lock: ${error.message}\n`));
        }),
    ),
  );
  return async () => {
    for (const timer of timers) timer.stop();
    await Promise.allSettled(pools.map((pool) => pool.end()));
  };
};

runPeersWorker(startNodes);
