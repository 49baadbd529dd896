import { DataSource } from 'typeorm';
import { JobLeaseReplicationError, JobScheduler, JobSchedulerService } from '../../src/features';

/** What the lease itself says of the cluster's replication, through HAProxy. */
export interface ReplicationReading {
  safe: boolean;
  standbys: number;
  synchronousStandbyNames: string;
  synchronousCommit: string;
  /** What an acquire with `requireSynchronousReplication: true` got. */
  strictAcquire: 'granted' | 'refused' | `failed: ${string}`;
}

/**
 * Reads replicationStatus() as an application would, and tries one acquire with
 * requireSynchronousReplication: synchronous mode must be judged safe and granted, asynchronous
 * mode unsafe and refused with JobLeaseReplicationError.
 */
export const readReplication = async (url: string, mode: string): Promise<ReplicationReading> => {
  const dataSource = new DataSource({ type: 'postgres', url, entities: [JobScheduler], poolSize: 1, connectTimeoutMS: 5_000 });
  await dataSource.initialize();
  try {
    const status = await new JobSchedulerService(dataSource, { nodeId: 'replication-check' }).replicationStatus();
    const strict = new JobSchedulerService(dataSource, { nodeId: 'replication-check', requireSynchronousReplication: true });
    let strictAcquire: ReplicationReading['strictAcquire'];
    try {
      const lock = await strict.acquire({ code: 'failover-replication-check', runKey: `${mode}-${Date.now()}` });
      if (lock.acquired) await strict.complete(lock);
      strictAcquire = 'granted';
    } catch (error) {
      strictAcquire = error instanceof JobLeaseReplicationError ? 'refused' : `failed: ${error instanceof Error ? error.message : String(error)}`;
    }
    const { safe, standbys, synchronousStandbyNames, synchronousCommit } = status;
    return { safe, standbys, synchronousStandbyNames, synchronousCommit, strictAcquire };
  } finally {
    await dataSource.destroy();
  }
};

/** What each mode must read: sync safe and granted, async unsafe and refused; two standbys either way. */
export const replicationProblems = (reading: ReplicationReading, mode: string): string[] => {
  const expected = mode === 'sync' ? { safe: true, strictAcquire: 'granted' } : { safe: false, strictAcquire: 'refused' };
  const problems: string[] = [];
  if (reading.standbys !== 2) problems.push(`replication check saw ${reading.standbys} streaming standbys, expected 2`);
  if (reading.safe !== expected.safe) problems.push(`replication check judged ${mode} mode ${reading.safe ? 'safe' : 'unsafe'}`);
  if (reading.strictAcquire !== expected.strictAcquire) problems.push(`requireSynchronousReplication: acquire ${reading.strictAcquire} in ${mode} mode`);
  return problems;
};
