import { RAW_FUNCTION, RAW_FUNCTION_PREPARED } from '../support/acquire-function';
import { createBenchDatabase } from '../support/bench-database';
import { addCycleFigures, addCycleRatio, callersLabel, measureCycles, warmUp } from '../support/cycles';
import { formatSpread } from '../support/format';
import type { LeaseNode, LeaseVariant } from '../support/lease-node';
import { LIBRARY, LIBRARY_UNNAMED, LIBRARY_WITHOUT_TELEMETRY } from '../support/library-variants';
import { RAW, RAW_PREPARED } from '../support/raw-variants';
import type { Scenario } from './scenario';

const CALLERS = [1, 8] as const;
/** TypeORM's (and pg's) default pool size, for every variant: more than the callers, so none queues. */
const POOL_SIZE = 10;
const VARIANTS: readonly LeaseVariant[] = [LIBRARY, LIBRARY_WITHOUT_TELEMETRY, LIBRARY_UNNAMED, RAW, RAW_PREPARED, RAW_FUNCTION, RAW_FUNCTION_PREPARED];
const SIZES = {
  full: { slices: 4, sliceMs: 250, warmUpMs: 500 },
  quick: { slices: 1, sliceMs: 150, warmUpMs: 100 },
};

export const uncontended: Scenario = {
  name: 'uncontended',
  title: 'Uncontended cycles (acquire + complete on fresh runKeys)',
  run: async ({ quick, repetitions, cleanup, sheet, log }) => {
    const { slices, sliceMs, warmUpMs } = quick ? SIZES.quick : SIZES.full;
    const database = await createBenchDatabase(cleanup);
    const nodes = new Map<LeaseVariant, LeaseNode>();
    for (const variant of VARIANTS) {
      nodes.set(variant, await variant.start({ url: database.url, nodeId: variant.name, poolSize: POOL_SIZE, cleanup }));
    }
    await warmUp(nodes, Math.max(...CALLERS), warmUpMs);

    for (const callers of CALLERS) {
      const caseName = callersLabel(callers);
      log(`uncontended: ${caseName}, ${VARIANTS.length} variants x ${repetitions} x ${slices} x ${sliceMs} ms`);
      const results = await measureCycles(nodes, { callers, repetitions, slices, sliceMs });
      addCycleFigures(sheet, caseName, results);
      const shipped = addCycleRatio(sheet, caseName, results, LIBRARY, RAW);
      addCycleRatio(sheet, caseName, results, LIBRARY_WITHOUT_TELEMETRY, RAW);
      const unnamed = addCycleRatio(sheet, caseName, results, LIBRARY_UNNAMED, RAW);
      addCycleRatio(sheet, caseName, results, RAW_PREPARED, RAW);
      addCycleRatio(sheet, caseName, results, RAW_FUNCTION, RAW);
      const ownCost = addCycleRatio(sheet, caseName, results, LIBRARY, RAW_PREPARED);
      // Why prepared acquires send the statement itself: named, the function saves nothing more.
      const namedFunction = addCycleRatio(sheet, caseName, results, RAW_FUNCTION_PREPARED, RAW_PREPARED);
      sheet.goal(`library ÷ raw, ${caseName} (defaults)`, '≥ 0.9', formatSpread(shipped, 'x'), shipped.median >= 0.9);
      sheet.goal(`aim: library ÷ raw, ${caseName} (defaults)`, '≥ 1.0', formatSpread(shipped, 'x'), shipped.median >= 1.0);
      sheet.goal(`library-unnamed ÷ raw, ${caseName} (PgBouncer-safe)`, '≥ 0.9', formatSpread(unnamed, 'x'), unnamed.median >= 0.9);
      sheet.goal(`library ÷ raw+prepared, ${caseName} (the library's own cost)`, 'reported', formatSpread(ownCost, 'x'), null);
      sheet.goal(`raw-function+prepared ÷ raw+prepared, ${caseName} (named: function vs statement)`, 'reported', formatSpread(namedFunction, 'x'), null);
    }
    sheet.note(
      'Node CPU per cycle is the CPU time of this process (user + system) divided by the cycles: the cost of the client side, less noisy than throughput on a shared machine.',
    );
    return {
      sizes: `${CALLERS.join(' and ')} concurrent callers, closed loop, fresh runKey per cycle; one node per variant, pool size ${POOL_SIZE}; ${repetitions} repetitions of ${slices} interleaved slices of ${sliceMs} ms after a ${warmUpMs} ms warm-up`,
      variants: Object.fromEntries(VARIANTS.map((variant) => [variant.name, variant.description])),
    };
  },
};
