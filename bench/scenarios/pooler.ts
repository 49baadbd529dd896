import { createBenchDatabase, hasConnectionsFor } from '../support/bench-database';
import { formatSpread } from '../support/format';
import type { LeaseVariant } from '../support/lease-node';
import { LIBRARY_UNNAMED } from '../support/library-variants';
import { RAW, TWO_STATEMENT } from '../support/raw-variants';
import { addTickFigures, addTickRatio, measureTicksOnNodes } from '../support/ticks';
import { findPgBouncer, type PgBouncer, startPgBouncer } from '../../test/support/pgbouncer';
import type { Scenario } from './scenario';

const NODE_COUNTS = [2, 32] as const;
const POOL_SIZE = 2;
/** PgBouncer's own default_pool_size: server connections per database and user. */
const SERVER_CONNECTIONS = 20;
/** The goals for library-unnamed ÷ two-statement (ticks/s), direct and through PgBouncer. */
const TARGETS: ReadonlyMap<number, number> = new Map([
  [2, 0.95],
  [32, 1.25],
]);
const SIZES = {
  full: { slices: 4, sliceMs: 250, warmUpMs: 300 },
  quick: { slices: 1, sliceMs: 100, warmUpMs: 50 },
};

/** The same variant with its nodes connected through `bouncer` instead of to the server. */
const throughPooler = (variant: LeaseVariant, bouncer: PgBouncer): LeaseVariant => ({
  name: `${variant.name} via pgbouncer`,
  description: `${variant.description}; through PgBouncer in transaction pooling`,
  start: (context) => variant.start({ ...context, url: bouncer.url(context.url) }),
});

/**
 * The PgBouncer setting (`preparedStatements: false`) against the 1.1 form, contended, directly
 * and through a real PgBouncer in transaction mode: unnamed acquires call the function the
 * migrations install, whose plan the server caches per session (`raw` is the statement itself,
 * unnamed: what the library sends while that migration has not run).
 */
export const pooler: Scenario = {
  name: 'pooler',
  title: 'The pooler path (preparedStatements: false), direct and through PgBouncer',
  run: async ({ quick, repetitions, cleanup, sheet, log }) => {
    const { slices, sliceMs, warmUpMs } = quick ? SIZES.quick : SIZES.full;
    const database = await createBenchDatabase(cleanup);
    const direct = [LIBRARY_UNNAMED, TWO_STATEMENT, RAW];
    let bouncer: PgBouncer | undefined;
    if (findPgBouncer()) {
      bouncer = cleanup.add(await startPgBouncer(database.url, { poolMode: 'transaction', poolSize: SERVER_CONNECTIONS }), (started) => started.stop());
    } else {
      sheet.note('PgBouncer is not installed (apt-get install pgbouncer): only the direct figures were measured.');
      sheet.goal('measured through PgBouncer', 'pgbouncer installed', 'skipped', null);
    }
    const pooled = bouncer ? direct.map((variant) => throughPooler(variant, bouncer)) : [];
    const variants = [...direct, ...pooled];
    for (const count of NODE_COUNTS) {
      const caseName = `${count} nodes`;
      if (!(await hasConnectionsFor(database, count * POOL_SIZE * direct.length + SERVER_CONNECTIONS, caseName, sheet))) continue;
      log(`pooler: ${caseName}, ${variants.length} variants x ${repetitions} x ${slices} x ${sliceMs} ms`);
      const results = await measureTicksOnNodes(variants, count, { url: database.url, poolSize: POOL_SIZE, sizes: { repetitions, slices, sliceMs }, warmUpMs });
      addTickFigures(sheet, caseName, results);
      const target = TARGETS.get(count);
      for (const [library, baseline, where] of [
        [direct[0], direct[1], 'direct'],
        [pooled[0], pooled[1], 'via PgBouncer'],
      ] as const) {
        if (!library || !baseline) continue;
        const ratio = addTickRatio(sheet, caseName, results, library, baseline);
        if (target !== undefined) {
          sheet.goal(`library-unnamed ÷ two-statement, ${caseName}, ${where}`, `≥ ${target}`, formatSpread(ratio, 'x'), ratio.median >= target);
        }
      }
      addTickRatio(sheet, caseName, results, RAW, TWO_STATEMENT);
      if (pooled[2] && pooled[1]) addTickRatio(sheet, caseName, results, pooled[2], pooled[1]);
      const runs = [...results.values()].flat();
      const violations = runs.reduce((sum, run) => sum + run.ticksWithoutOneWinner, 0);
      const ticks = runs.reduce((sum, run) => sum + run.ticks, 0);
      sheet.goal(`exactly one winner per tick, ${caseName}`, '0 ticks without', `${violations} of ${ticks} ticks`, violations === 0);
    }
    sheet.note(
      `Through PgBouncer ${bouncer ? '' : '(not measured here) '}in transaction pooling with ${SERVER_CONNECTIONS} server connections (its default_pool_size); every variant sends unnamed statements. The library's unnamed acquire is a call of "job-scheduler_acquire" (migration 1764547200005): PL/pgSQL keeps its plan per server session, which PgBouncer shares between clients.`,
    );
    return {
      sizes: `${NODE_COUNTS.join(' and ')} nodes per variant, each its own pool of ${POOL_SIZE}; ${repetitions} repetitions of ${slices} interleaved slices of ${sliceMs} ms after a ${warmUpMs} ms warm-up`,
      variants: Object.fromEntries(variants.map((variant) => [variant.name, variant.description])),
    };
  },
};
