import type { TestDatabase } from './test-database';

/** One prune statement as the database saw it: when it started and ended (ms, database clock), and the rows it deleted. */
export interface PruneBatch {
  startedMs: number;
  endedMs: number;
  rows: number;
}

/**
 * Records every DELETE statement on the table (each made to take at least 30 ms) while `work`
 * runs, then removes the recorder: the batches in order (with the rows each deleted), and the
 * work's result.
 */
export const recordPruneBatches = async <T>(database: TestDatabase, work: () => Promise<T>): Promise<{ result: T; batches: PruneBatch[] }> => {
  await database.sql(`
    CREATE TABLE prune_batches (started timestamptz, ended timestamptz, rows int);
    CREATE FUNCTION record_prune_batch() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_sleep(0.03);
      INSERT INTO prune_batches SELECT statement_timestamp(), clock_timestamp(), count(*) FROM gone;
      RETURN NULL;
    END $$;
    CREATE TRIGGER record_prune_batch AFTER DELETE ON "job-scheduler" REFERENCING OLD TABLE AS gone
      FOR EACH STATEMENT EXECUTE FUNCTION record_prune_batch();`);
  try {
    const result = await work();
    const rows = await database.sql<PruneBatch>(
      `SELECT extract(epoch FROM started) * 1000 AS "startedMs", extract(epoch FROM ended) * 1000 AS "endedMs", rows FROM prune_batches ORDER BY started`,
    );
    return { result, batches: rows.map((row) => ({ startedMs: Number(row.startedMs), endedMs: Number(row.endedMs), rows: row.rows })) };
  } finally {
    await database.sql('DROP TRIGGER record_prune_batch ON "job-scheduler"; DROP FUNCTION record_prune_batch(); DROP TABLE prune_batches;');
  }
};

/** Each gap between batches, with the duration of the batch before it. */
export const restsAfterBatches = (batches: readonly PruneBatch[]): { took: number; rested: number }[] =>
  batches.slice(1).map((batch, index) => ({ took: batches[index].endedMs - batches[index].startedMs, rested: batch.startedMs - batches[index].endedMs }));
