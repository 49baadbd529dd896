import { createBenchDatabase, hasConnectionsFor } from '../support/bench-database';
import { formatSpread } from '../support/format';
import type { LeaseVariant } from '../support/lease-node';
import { LIBRARY } from '../support/library-variants';
import { RAW_PREPARED, TWO_STATEMENT_PREPARED } from '../support/raw-variants';
import { type RetryCounts, serializableTwoStatementVariant } from '../support/serializable-variant';
import { percentile, spread } from '../support/statistics';
import { addTickFigures, addTickRatio, measureTicksOnNodes, ticksPerSecond } from '../support/ticks';
import type { Scenario } from './scenario';

const NODE_COUNTS = [8, 32] as const;
const POOL_SIZE = 2;
const SIZES = {
  full: { slices: 4, sliceMs: 500, warmUpMs: 300 },
  quick: { slices: 1, sliceMs: 150, warmUpMs: 50 },
};

/**
 * What the acquire costs where it cannot be one statement (docs/scale-out.md): CockroachDB
 * refuses two modifications of one table in one statement (0A000), so the acquire becomes the
 * claim and the reclaim in a SERIALIZABLE transaction, retried on 40001. Measured here on
 * PostgreSQL (no CockroachDB on this machine): every node races each tick of one code, as in
 * "contended", against today's one-statement acquire.
 */
export const acquireSerializable: Scenario = {
  name: 'acquire-serializable',
  title: 'Scale-out: the acquire as two statements in a SERIALIZABLE transaction (the CockroachDB form) against one statement, under contention',
  run: async ({ quick, repetitions, cleanup, sheet, log }) => {
    const { slices, sliceMs, warmUpMs } = quick ? SIZES.quick : SIZES.full;
    const database = await createBenchDatabase(cleanup);
    for (const count of NODE_COUNTS) {
      const caseName = `${count} nodes`;
      const counts: RetryCounts = { acquires: 0, retries: 0, gaveUp: 0 };
      const serializable = serializableTwoStatementVariant(counts);
      const variants: LeaseVariant[] = [LIBRARY, RAW_PREPARED, TWO_STATEMENT_PREPARED, serializable];
      if (!(await hasConnectionsFor(database, count * POOL_SIZE * variants.length, caseName, sheet))) continue;
      log(`acquire-serializable: ${caseName}, ${variants.length} variants x ${repetitions} x ${slices} x ${sliceMs} ms`);
      const results = await measureTicksOnNodes(variants, count, { url: database.url, poolSize: POOL_SIZE, sizes: { repetitions, slices, sliceMs }, warmUpMs });
      addTickFigures(sheet, caseName, results);
      for (const [variant, runs] of results)
        sheet.add(
          caseName,
          variant.name,
          'acquires/s (ticks/s × nodes)',
          '',
          runs.map((run) => ticksPerSecond(run) * count),
        );
      const ratio = addTickRatio(sheet, caseName, results, serializable, RAW_PREPARED);
      addTickRatio(sheet, caseName, results, serializable, LIBRARY);
      const retriesPerAcquire = counts.retries / Math.max(1, counts.acquires);
      sheet.add(caseName, serializable.name, 'retries (40001) per acquire', '', [retriesPerAcquire]);
      sheet.add(caseName, serializable.name, 'acquires given up after 20 attempts', '', [counts.gaveUp]);
      const runs = [...results.values()].flat();
      const violations = runs.reduce((sum, run) => sum + run.ticksWithoutOneWinner, 0);
      const ticks = runs.reduce((sum, run) => sum + run.ticks, 0);
      sheet.goal(`exactly one winner per tick, every variant, ${caseName}`, '0 ticks without', `${violations} of ${ticks} ticks`, violations === 0);
      const p99 = (variant: LeaseVariant) => spread((results.get(variant) ?? []).map((run) => percentile(run.tickLatenciesMs, 99)));
      sheet.note(
        `${caseName}: serializable ÷ one statement (prepared) ticks/s ${formatSpread(ratio, 'x')}; p99 tick ${formatSpread(p99(serializable), 'ms')} against ${formatSpread(p99(RAW_PREPARED), 'ms')}; ${counts.retries} retries in ${counts.acquires} acquires (warm-up included).`,
      );
    }
    sheet.note(
      'A tick: every node sends its acquire of the same fresh run at once; the one winner completes it. Acquires per second = ticks/s × nodes. The serializable form is run on PostgreSQL (SSI), not on CockroachDB: it shows the cost of the form (round trips, aborted transactions), not CockroachDB’s own speed.',
    );
    return {
      sizes: `${NODE_COUNTS.join(', ')} nodes per variant, each its own pool of ${POOL_SIZE}; ${repetitions} repetitions of ${slices} interleaved slices of ${sliceMs} ms after a ${warmUpMs} ms warm-up`,
      variants: {
        [LIBRARY.name]: LIBRARY.description,
        [RAW_PREPARED.name]: RAW_PREPARED.description,
        [TWO_STATEMENT_PREPARED.name]: TWO_STATEMENT_PREPARED.description,
        'serializable-2-statement': serializableTwoStatementVariant({ acquires: 0, retries: 0, gaveUp: 0 }).description,
      },
    };
  },
};
