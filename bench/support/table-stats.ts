import { Client } from 'pg';
import type { TestDatabase } from '../../test/support/test-database';
import type { CleanupStack } from './cleanup';

/** What pg_stat_user_tables and the relation sizes say about the lease table. */
export interface TableStats {
  inserts: number;
  updates: number;
  hotUpdates: number;
  deletes: number;
  deadTuples: number;
  autovacuums: number;
  autoanalyzes: number;
  /** Heap with its TOAST, free space and visibility maps (pg_table_size). */
  tableBytes: number;
  /** Each index of the table, by name (pg_relation_size). */
  indexBytes: Map<string, number>;
  /** idx_scan of each index, by name. */
  indexScans: Map<string, number>;
}

/** Rows counted, not estimated. */
export interface RowCount {
  rows: number;
  /** Finished rows whose last write is older than the age asked for (what retention should have deleted). */
  overdue: number;
}

export const totalIndexBytes = (sizes: { indexBytes: ReadonlyMap<string, number> }): number =>
  [...sizes.indexBytes.values()].reduce((sum, bytes) => sum + bytes, 0);

export interface TableProbe {
  /** Counters as of each backend's last flush of its statistics (when it goes idle or exits). */
  stats(): Promise<TableStats>;
  count(overdueAfterMs: number): Promise<RowCount>;
}

/** A probe of the lease table on a connection of its own, closed when the scenario ends. */
export const openTableProbe = async (database: TestDatabase, cleanup: CleanupStack): Promise<TableProbe> => {
  const client = new Client({ connectionString: database.url });
  await client.connect();
  cleanup.add(client, (connected) => connected.end());
  return {
    stats: async () => {
      // A snapshot of the statistics is kept for a transaction; each read takes a fresh one.
      await client.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await client.query<Record<string, string>>(
        `SELECT n_tup_ins::text AS inserts, n_tup_upd::text AS updates, n_tup_hot_upd::text AS "hotUpdates",
           n_tup_del::text AS deletes, n_dead_tup::text AS "deadTuples", autovacuum_count::text AS autovacuums,
           autoanalyze_count::text AS autoanalyzes, pg_table_size(relid)::text AS "tableBytes"
         FROM pg_stat_user_tables WHERE relid = '"job-scheduler"'::regclass`,
      );
      const indexes = await client.query<{ name: string; bytes: string; scans: string }>(
        `SELECT indexrelid::regclass::text AS name, pg_relation_size(indexrelid)::text AS bytes, idx_scan::text AS scans
         FROM pg_stat_user_indexes WHERE relid = '"job-scheduler"'::regclass ORDER BY 1`,
      );
      const row = rows[0];
      return {
        inserts: Number(row.inserts),
        updates: Number(row.updates),
        hotUpdates: Number(row.hotUpdates),
        deletes: Number(row.deletes),
        deadTuples: Number(row.deadTuples),
        autovacuums: Number(row.autovacuums),
        autoanalyzes: Number(row.autoanalyzes),
        tableBytes: Number(row.tableBytes),
        indexBytes: new Map(indexes.rows.map((index) => [index.name, Number(index.bytes)])),
        indexScans: new Map(indexes.rows.map((index) => [index.name, Number(index.scans)])),
      };
    },
    count: async (overdueAfterMs) => {
      const { rows } = await client.query<{ rows: string; overdue: string }>(
        `SELECT count(*)::text AS rows, count(*) FILTER (
           WHERE "status" <> 'RUNNING' AND "modifiedAt" < CURRENT_TIMESTAMP - $1::bigint * INTERVAL '1 millisecond')::text AS overdue
         FROM "job-scheduler"`,
        [overdueAfterMs],
      );
      return { rows: Number(rows[0].rows), overdue: Number(rows[0].overdue) };
    },
  };
};
