import { RAW_FUNCTION } from '../support/acquire-function';
import { createBenchDatabase, hasConnectionsFor } from '../support/bench-database';
import { formatSpread } from '../support/format';
import type { LeaseVariant } from '../support/lease-node';
import { LIBRARY, LIBRARY_UNNAMED } from '../support/library-variants';
import { DO_UPDATE, RAW, TWO_STATEMENT, TWO_STATEMENT_PREPARED } from '../support/raw-variants';
import { spread } from '../support/statistics';
import { addTickFigures, addTickRatio, measureTicksOnNodes, type TickResults } from '../support/ticks';
import type { FigureSheet } from '../support/report';
import type { Scenario } from './scenario';

const NODE_COUNTS = [2, 8, 32] as const;
/** Each node sends one statement at a time; a second connection lets nothing queue behind it. */
const POOL_SIZE = 2;
const VARIANTS: readonly LeaseVariant[] = [LIBRARY, LIBRARY_UNNAMED, RAW, RAW_FUNCTION, TWO_STATEMENT, TWO_STATEMENT_PREPARED, DO_UPDATE];
/** The goals for library ÷ two-statement (ticks/s). */
const TARGETS: ReadonlyMap<number, number> = new Map([
  [2, 0.95],
  [32, 1.25],
]);
const SIZES = {
  full: { slices: 4, sliceMs: 250, warmUpMs: 300 },
  quick: { slices: 1, sliceMs: 100, warmUpMs: 50 },
};

/** The statements a tick should cost: every node's acquire (two for a two-statement loser), plus the winner's complete. */
const expectedStatements = (variant: LeaseVariant, nodes: number): number =>
  variant === TWO_STATEMENT || variant === TWO_STATEMENT_PREPARED ? 2 * nodes : nodes + 1;

const addGoals = (sheet: FigureSheet, count: number, caseName: string, results: TickResults): void => {
  const target = TARGETS.get(count);
  for (const variant of [LIBRARY, LIBRARY_UNNAMED]) {
    const ratio = addTickRatio(sheet, caseName, results, variant, TWO_STATEMENT);
    if (target !== undefined) {
      sheet.goal(`${variant.name} ÷ two-statement, ${caseName}`, `≥ ${target}`, formatSpread(ratio, 'x'), ratio.median >= target);
    }
  }
  const runs = [...results.values()].flat();
  const violations = runs.reduce((sum, run) => sum + run.ticksWithoutOneWinner, 0);
  const ticks = runs.reduce((sum, run) => sum + run.ticks, 0);
  sheet.goal(`exactly one winner per tick, ${caseName}`, '0 ticks without', `${violations} of ${ticks} ticks`, violations === 0);
  for (const variant of [LIBRARY, TWO_STATEMENT]) {
    const perTick = spread((results.get(variant) ?? []).map((run) => run.statements / run.ticks));
    const expected = expectedStatements(variant, count);
    sheet.goal(`statements/tick, ${variant.name}, ${caseName}`, `${expected}`, formatSpread(perTick), perTick.max === expected);
  }
};

export const contended: Scenario = {
  name: 'contended',
  title: 'Contended acquire (every node races each tick of one code)',
  run: async ({ quick, repetitions, cleanup, sheet, log }) => {
    const { slices, sliceMs, warmUpMs } = quick ? SIZES.quick : SIZES.full;
    const database = await createBenchDatabase(cleanup);
    for (const count of NODE_COUNTS) {
      const caseName = `${count} nodes`;
      if (!(await hasConnectionsFor(database, count * VARIANTS.length, caseName, sheet))) continue;
      log(`contended: ${caseName}, ${VARIANTS.length} variants x ${repetitions} x ${slices} x ${sliceMs} ms`);
      const results = await measureTicksOnNodes(VARIANTS, count, { url: database.url, poolSize: POOL_SIZE, sizes: { repetitions, slices, sliceMs }, warmUpMs });
      addTickFigures(sheet, caseName, results);
      addTickRatio(sheet, caseName, results, LIBRARY, DO_UPDATE);
      addTickRatio(sheet, caseName, results, LIBRARY_UNNAMED, TWO_STATEMENT_PREPARED);
      addTickRatio(sheet, caseName, results, LIBRARY_UNNAMED, DO_UPDATE);
      addTickRatio(sheet, caseName, results, RAW, TWO_STATEMENT);
      addTickRatio(sheet, caseName, results, RAW, DO_UPDATE);
      addTickRatio(sheet, caseName, results, RAW_FUNCTION, TWO_STATEMENT);
      addGoals(sheet, count, caseName, results);
    }
    sheet.note(
      'A tick: every node sends its acquire of the same fresh run at once; the one winner completes it. Its latency runs from the first acquire sent to the complete returned; ticks follow each other back to back. All nodes live in this one Node process, which shares the 2 cores with PostgreSQL.',
    );
    return {
      sizes: `${NODE_COUNTS.join(', ')} nodes per variant, each its own pool of ${POOL_SIZE}; ${repetitions} repetitions of ${slices} interleaved slices of ${sliceMs} ms after a ${warmUpMs} ms warm-up`,
      variants: Object.fromEntries(VARIANTS.map((variant) => [variant.name, variant.description])),
    };
  },
};
