import { Client } from 'pg';
import type { TestDatabase } from '../../test/support/test-database';
import type { CleanupStack } from './cleanup';

/** What one database's sessions wrote to the WAL between two positions. */
export interface DatabaseWal {
  /** Bytes of the WAL records that touch the database's relations, and of its transactions' commit records. */
  walBytes: number;
  /** Of walBytes, the full-page images (pages first written after a checkpoint, whole). */
  fpiBytes: number;
  /** Transaction ids (so transactions that wrote) seen in those records. */
  xids: number;
}

export interface WalByDatabase {
  /** The server's WAL flush position, as pg_lsn text. */
  position(): Promise<string>;
  /** WAL written in [from, to), by database name (only databases that wrote appear). */
  between(from: string, to: string): Promise<Map<string, DatabaseWal>>;
}

/**
 * Splits the server's WAL by database, so that peers running side by side (each in a database of
 * its own) are each charged what they wrote: pg_walinspect reads the records between two
 * positions; a record that names a block ("rel <tablespace>/<database>/<relation>") belongs to that
 * database, and a record that names none (a commit) to the database its transaction wrote in.
 * Records of no database (checkpoints, running-xacts snapshots) are charged to nobody.
 *
 * A temporary physical replication slot, held by the probe's own session, keeps the WAL from the
 * first position on until the probe closes, so a checkpoint cannot recycle a segment before it is
 * read. Needs a superuser (or pg_read_server_files and REPLICATION) and the pg_walinspect
 * extension (PostgreSQL 15+; contrib, shipped with the embedded server).
 */
export const openWalByDatabase = async (database: TestDatabase, cleanup: CleanupStack): Promise<WalByDatabase> => {
  const client = new Client({ connectionString: database.url });
  await client.connect();
  cleanup.add(client, (connected) => connected.end());
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  await client.query('SELECT pg_create_physical_replication_slot($1, true, true)', [`bench_peers_${process.pid}`]);
  return {
    position: async () => (await client.query<{ lsn: string }>('SELECT pg_current_wal_flush_lsn()::text AS lsn')).rows[0].lsn,
    between: async (from, to) => {
      const { rows } = await client.query<{ datname: string; wal_bytes: string; fpi_bytes: string; xids: number }>(
        `WITH records AS (
           SELECT xid::text::bigint AS xid, record_length, fpi_length,
                  (regexp_match(block_ref, 'rel \\d+/(\\d+)/\\d+'))[1]::oid AS dboid
           FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
         ),
         writers AS (
           SELECT DISTINCT ON (xid) xid, dboid FROM records WHERE xid <> 0 AND dboid IS NOT NULL AND dboid <> 0
         ),
         charged AS (
           SELECT coalesce(NULLIF(records.dboid, 0), writers.dboid) AS dboid, records.xid, records.record_length, records.fpi_length
           FROM records LEFT JOIN writers ON records.dboid IS NULL AND writers.xid = records.xid
         )
         SELECT pg_database.datname, sum(charged.record_length)::text AS wal_bytes, sum(charged.fpi_length)::text AS fpi_bytes,
                count(DISTINCT charged.xid) FILTER (WHERE charged.xid <> 0)::int AS xids
         FROM charged JOIN pg_database ON pg_database.oid = charged.dboid
         GROUP BY pg_database.datname`,
        [from, to],
      );
      return new Map(rows.map((row) => [row.datname, { walBytes: Number(row.wal_bytes), fpiBytes: Number(row.fpi_bytes), xids: row.xids }]));
    },
  };
};
