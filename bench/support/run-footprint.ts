import type { JobSchedulerService } from '../../src/features';
import type { TestDatabase } from '../../test/support/test-database';
import { checkpoint, openWalProbe } from './bench-database';
import { startChurnLoad } from './churn-load';
import { type CleanupStack, withCleanup } from './cleanup';
import { sleep } from './deferred';
import { SHIPPED, startLibraryNode } from './library-variants';
import { openTableProbe, type TableStats, totalIndexBytes } from './table-stats';

export interface FootprintLoad {
  runs: number;
  ratePerSecond: number;
  /** From acquire to complete; the heartbeat is sent halfway. */
  holdMs: number;
}

/** What `runs` full cycles left on disk and in the WAL. */
export interface RunFootprint {
  runs: number;
  /** Growth over the empty table: heap (with TOAST, FSM and VM), and each index by name. */
  tableBytes: number;
  indexBytes: Map<string, number>;
  walBytes: number;
  updates: number;
  hotUpdates: number;
}

const NODES = 2;
const POOL_SIZE = 10;
/** Statistics reach pg_stat_user_tables when a backend goes idle or exits: how long to wait for them. */
const STATS_WAIT_MS = 15_000;

/** Waits until the statistics show every heartbeat and complete (the nodes' backends have exited). */
const settledStats = async (read: () => Promise<TableStats>, updates: number): Promise<TableStats> => {
  const deadline = performance.now() + STATS_WAIT_MS;
  for (;;) {
    const stats = await read();
    if (stats.updates >= updates || performance.now() > deadline) return stats;
    await sleep(100);
  }
};

/**
 * Runs `load.runs` full lease cycles (acquire, heartbeat, complete; fresh occurrences) on a fresh
 * database from a CHECKPOINT, and measures what they added: table and index bytes (all rows still
 * there: no retention, no vacuum but autovacuum's), server WAL, and HOT updates.
 */
export const measureRunFootprint = async (database: TestDatabase, load: FootprintLoad, cleanup: CleanupStack): Promise<RunFootprint> => {
  const probe = await openTableProbe(database, cleanup);
  const stats = () => probe.stats();
  const walPosition = await openWalProbe(database, cleanup);
  const empty = await stats();
  const { runs, walBytes } = await withCleanup(async (nodesCleanup) => {
    const nodes: JobSchedulerService[] = [];
    for (let index = 0; index < NODES; index++) {
      nodes.push(await startLibraryNode({ url: database.url, nodeId: `footprint-${index}`, poolSize: POOL_SIZE, cleanup: nodesCleanup }, SHIPPED));
    }
    await checkpoint(database);
    const walBefore = await walPosition();
    const churn = startChurnLoad(nodes, { ...load, maxInFlight: Number.POSITIVE_INFINITY });
    await churn.allStarted;
    await churn.stop();
    return { runs: churn.started(), walBytes: Number((await walPosition()) - walBefore) };
  });
  const after = await settledStats(stats, 2 * runs);
  return {
    runs,
    tableBytes: after.tableBytes - empty.tableBytes,
    indexBytes: new Map([...after.indexBytes].map(([name, bytes]) => [name, bytes - (empty.indexBytes.get(name) ?? 0)])),
    walBytes,
    updates: after.updates - empty.updates,
    hotUpdates: after.hotUpdates - empty.hotUpdates,
  };
};

export const footprintTotalBytes = (footprint: RunFootprint): number => footprint.tableBytes + totalIndexBytes(footprint);
