import PgBoss from 'pg-boss';
import { type StartNodes, type StopNodes, stopAll } from '../peer-schedulers';
import { runPeersWorker } from '../peers-worker';

/** pg-boss 10: a queue per job (v10 keys a schedule by its queue), schedule() on every node, work() on every node. */
const startNodes: StartNodes = async (options) => {
  const stops: StopNodes[] = [];
  for (let index = 0; index < options.nodes; index++) {
    const boss = new PgBoss({ connectionString: options.url, max: options.poolSize });
    boss.on('error', (error: Error) => process.stderr.write(`pg-boss node ${index}: ${error.message}\n`));
    await boss.start();
    // Declared first, subscribed after: with a poller per queue running, 1,000 declarations
    // queue behind the pollers for the pool's connections (a node took minutes to boot).
    for (const job of options.jobs) {
      await boss.createQueue(job);
      await boss.schedule(job, options.cron, {}, { tz: 'UTC', singletonKey: job, singletonSeconds: 60 });
    }
    for (const job of options.jobs) {
      // pg-boss sends a schedule's job within the minute after its instant (its cron looks back
      // 60 s), so the instant is the job's creation time down to the minute.
      await boss.work(job, { includeMetadata: true }, async ([sent]) => {
        options.onRun(job, Math.floor(sent.createdOn.getTime() / 60_000) * 60_000);
      });
    }
    stops.push(() => boss.stop({ graceful: false, wait: false }));
  }
  return stopAll(stops);
};

runPeersWorker(startNodes);
