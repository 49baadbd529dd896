import { ADVISORY_LOCK } from '../support/advisory-lock-variant';
import { createBenchDatabase, hasConnectionsFor } from '../support/bench-database';
import { withCleanup } from '../support/cleanup';
import { addCycleFigures, addCycleRatio, callersLabel, measureCycles, warmUp } from '../support/cycles';
import { formatSpread } from '../support/format';
import type { LeaseNode, LeaseVariant } from '../support/lease-node';
import { LIBRARY, LIBRARY_UNNAMED } from '../support/library-variants';
import { addTickFigures, addTickRatio, measureTicksOnNodes } from '../support/ticks';
import type { Scenario } from './scenario';

const VARIANTS: readonly LeaseVariant[] = [LIBRARY, LIBRARY_UNNAMED, ADVISORY_LOCK];
const CALLERS = [1, 8] as const;
const NODE_COUNTS = [2, 8, 32] as const;
const UNCONTENDED_POOL_SIZE = 10;
const CONTENDED_POOL_SIZE = 2;
const SIZES = {
  full: { slices: 2, sliceMs: 250, warmUpMs: 300 },
  quick: { slices: 1, sliceMs: 100, warmUpMs: 50 },
};

export const peer: Scenario = {
  name: 'peer',
  title: 'Peer: a hand-rolled pg_try_advisory_lock on the same server',
  run: async ({ quick, repetitions, cleanup, sheet, log }) => {
    const { slices, sliceMs, warmUpMs } = quick ? SIZES.quick : SIZES.full;
    const database = await createBenchDatabase(cleanup);

    await withCleanup(async (nodesCleanup) => {
      const nodes = new Map<LeaseVariant, LeaseNode>();
      for (const variant of VARIANTS) {
        nodes.set(variant, await variant.start({ url: database.url, nodeId: variant.name, poolSize: UNCONTENDED_POOL_SIZE, cleanup: nodesCleanup }));
      }
      await warmUp(nodes, Math.max(...CALLERS), warmUpMs);
      for (const callers of CALLERS) {
        const caseName = `uncontended, ${callersLabel(callers)}`;
        log(`peer: ${caseName}`);
        const results = await measureCycles(nodes, { callers, repetitions, slices, sliceMs });
        addCycleFigures(sheet, caseName, results);
        const ratio = addCycleRatio(sheet, caseName, results, LIBRARY, ADVISORY_LOCK);
        addCycleRatio(sheet, caseName, results, LIBRARY_UNNAMED, ADVISORY_LOCK);
        sheet.goal(`library ÷ advisory-lock, ${caseName}`, 'reported', formatSpread(ratio, 'x'), null);
      }
    });

    for (const count of NODE_COUNTS) {
      const caseName = `contended, ${count} nodes`;
      if (!(await hasConnectionsFor(database, count * VARIANTS.length, caseName, sheet))) continue;
      log(`peer: ${caseName}`);
      const results = await measureTicksOnNodes(VARIANTS, count, {
        url: database.url,
        poolSize: CONTENDED_POOL_SIZE,
        sizes: { repetitions, slices, sliceMs },
        warmUpMs,
      });
      addTickFigures(sheet, caseName, results);
      const ratio = addTickRatio(sheet, caseName, results, LIBRARY, ADVISORY_LOCK);
      addTickRatio(sheet, caseName, results, LIBRARY_UNNAMED, ADVISORY_LOCK);
      sheet.goal(`library ÷ advisory-lock, ${caseName}`, 'reported', formatSpread(ratio, 'x'), null);
    }
    sheet.note(
      'No package was installed for the peer: it is the lock applications hand-roll (bench/support/advisory-lock-variant.ts). It writes nothing, so it is the floor for any lock on this server, but it does less: no record that a tick ran (a node that tries after the unlock runs it again), no fencing token, no expiry or reclaim, and the holder keeps a connection checked out for the whole run.',
    );
    return {
      sizes: `uncontended: ${CALLERS.join(' and ')} callers (pool ${UNCONTENDED_POOL_SIZE}); contended: ${NODE_COUNTS.join(', ')} nodes (pool ${CONTENDED_POOL_SIZE} each); ${repetitions} repetitions of ${slices} interleaved slices of ${sliceMs} ms after a ${warmUpMs} ms warm-up`,
      variants: Object.fromEntries(VARIANTS.map((variant) => [variant.name, variant.description])),
    };
  },
};
