import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { JobScheduler, JobSchedulerService } from '../../src/features';
import { summarizeError } from './failover.error-text';
import { FailoverEventLog } from './failover.event-log';
import { sleep } from '../support/fleet';
import { FAILOVER_PROTOCOL } from './failover.protocol';
import { TokenLeakDetector } from './failover.token-leaks';
import { FailoverNode } from './failover.worker-node';

/**
 * One node process of the failover proof: its own TypeORM DataSource (pool) through HAProxy and
 * its own JobSchedulerService. Forked by failover.fleet.ts with FAILOVER_NODE set; talks to the
 * orchestrator over IPC. It installs no handler for uncaught errors on purpose: a crash must show
 * as a crash.
 */
const settings = FAILOVER_PROTOCOL.settings('test/failover/worker.ts is started by the failover orchestrator (npm run failover)');
const parent = FAILOVER_PROTOCOL.parent();

const leaks = new TokenLeakDetector();

// Everything this process prints (Nest's Logger, console, TypeORM) passes the leak detector first.
for (const stream of [process.stdout, process.stderr]) {
  const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  stream.write = (chunk: unknown, ...rest: unknown[]): boolean => {
    leaks.scanText('console', typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : String(chunk));
    return write(chunk, ...rest);
  };
}

const main = async (): Promise<void> => {
  const events = new FailoverEventLog(settings.eventsFile);
  events.write({ type: 'boot', nodeId: settings.nodeId });
  const dataSource = new DataSource({
    type: 'postgres',
    url: settings.databaseUrl,
    entities: [JobScheduler],
    poolSize: settings.poolSize,
    applicationName: `failover-${settings.nodeId}`,
    connectTimeoutMS: 3_000,
  });
  for (let attempt = 1; ; attempt++) {
    try {
      await dataSource.initialize();
      break;
    } catch (error) {
      if (attempt >= 20) throw error;
      process.stderr.write(`node ${settings.nodeId}: database not reachable yet (${summarizeError(error).message})\n`);
      await sleep(500);
    }
  }
  const jobs = new JobSchedulerService(dataSource, { nodeId: settings.nodeId });
  const node = new FailoverNode(settings, jobs, events, leaks, parent.send);

  let shuttingDown = false;
  const shutdown = async (): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    // Runs still under way are told (JobShutdownError) and, after the grace, released.
    await jobs.beforeApplicationShutdown();
    await node.settled();
    await dataSource.destroy().catch(() => undefined);
    await parent.sendAndFlush({ type: 'final', leaks: leaks.counts(), ownerTokens: leaks.ownerTokens });
    process.exit(0);
  };

  parent.onMessage((message) => {
    if (message.type === 'start') node.start(message.firstTickAt);
    if (message.type === 'stop-ticks') node.stopTicks(message.lastTickAt);
    if (message.type === 'shutdown') {
      shutdown().catch((error: unknown) => {
        process.stderr.write(`node ${settings.nodeId} could not shut down: ${summarizeError(error).message}\n`);
        process.exit(2);
      });
    }
  });
  parent.exitWhenOrphaned(() => shuttingDown);
  parent.send({ type: 'ready' });
};

main().catch((error: unknown) => {
  process.stderr.write(`node ${settings.nodeId} failed: ${summarizeError(error).message}\n`);
  process.exit(1);
});
