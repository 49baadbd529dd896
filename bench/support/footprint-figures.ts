import { createBenchDatabase } from './bench-database';
import { type CleanupStack, withCleanup } from './cleanup';
import { formatNumber, formatSpread } from './format';
import { interleave } from './interleave';
import type { FigureSheet } from './report';
import { footprintTotalBytes, measureRunFootprint, type RunFootprint } from './run-footprint';
import { pairedRatios, spread } from './statistics';
import { BEFORE_TUNING, SHIPPED_TABLE, TUNED } from './table-setups';

export interface FootprintSizes {
  runs: number;
  ratePerSecond: number;
  /** One case per run length (acquire to complete). */
  holdsMs: readonly number[];
  repetitions: number;
}

const perMillion = (bytes: number, runs: number): number => ((bytes / runs) * 1e6) / 2 ** 20;

/** Fresh databases of each setup (before 0004, with 0004, every migration), interleaved, `sizes.runs` full cycles each; figures per run length. */
export const addRunFootprints = async (sheet: FigureSheet, sizes: FootprintSizes, log: (message: string) => void): Promise<void> => {
  const setups = [BEFORE_TUNING, TUNED, SHIPPED_TABLE];
  for (const holdMs of sizes.holdsMs) {
    const caseName = `${formatNumber(sizes.runs)} runs of ${formatNumber(holdMs)} ms`;
    log(`table-growth: footprint, ${caseName}, ${setups.length} setups x ${sizes.repetitions}`);
    const results = await interleave(setups, { repetitions: sizes.repetitions }, (setup) =>
      withCleanup(async (cleanup: CleanupStack) => {
        const database = await createBenchDatabase(cleanup, setup.migrations);
        return measureRunFootprint(database, { runs: sizes.runs, ratePerSecond: sizes.ratePerSecond, holdMs }, cleanup);
      }),
    );
    for (const [setup, footprints] of results) {
      const add = (metric: string, unit: string, pick: (footprint: RunFootprint) => number) =>
        sheet.add(caseName, setup.name, metric, unit, footprints.map(pick));
      add('table per 1e6 runs', 'MiB', (footprint) => perMillion(footprint.tableBytes, footprint.runs));
      for (const name of footprints[0]?.indexBytes.keys() ?? []) {
        add(`index ${name} per 1e6 runs`, 'MiB', (footprint) => perMillion(footprint.indexBytes.get(name) ?? 0, footprint.runs));
      }
      add('table + indexes per 1e6 runs', 'MiB', (footprint) => perMillion(footprintTotalBytes(footprint), footprint.runs));
      add('WAL per run', 'bytes', (footprint) => footprint.walBytes / footprint.runs);
      add('HOT updates (heartbeat + complete)', '%', (footprint) => (100 * footprint.hotUpdates) / footprint.updates);
    }
    const before = results.get(BEFORE_TUNING) ?? [];
    const after = results.get(TUNED) ?? [];
    const bytes = (footprints: RunFootprint[]) => footprints.map((footprint) => footprintTotalBytes(footprint) / footprint.runs);
    const wal = (footprints: RunFootprint[]) => footprints.map((footprint) => footprint.walBytes / footprint.runs);
    const hot = (footprints: RunFootprint[]) => footprints.map((footprint) => (100 * footprint.hotUpdates) / footprint.updates);
    const label = `${TUNED.name} ÷ ${BEFORE_TUNING.name}`;
    const bytesRatio = sheet.addRatio(caseName, label, 'table + indexes ratio', pairedRatios(bytes(after), bytes(before)));
    const walRatio = sheet.addRatio(caseName, label, 'WAL ratio', pairedRatios(wal(after), wal(before)));
    const spreadOf = (values: number[], unit: string) => formatSpread(spread(values), unit);
    sheet.goal(
      `table + indexes per run, ${caseName}`,
      `reported (${BEFORE_TUNING.name} → ${TUNED.name})`,
      `${spreadOf(bytes(before), 'bytes')} → ${spreadOf(bytes(after), 'bytes')} (${formatSpread(bytesRatio, 'x')})`,
      null,
    );
    sheet.goal(
      `WAL per run, ${caseName}`,
      `reported (${BEFORE_TUNING.name} → ${TUNED.name})`,
      `${spreadOf(wal(before), 'bytes')} → ${spreadOf(wal(after), 'bytes')} (${formatSpread(walRatio, 'x')})`,
      null,
    );
    sheet.goal(
      `HOT updates, ${caseName}`,
      `reported (${BEFORE_TUNING.name} → ${TUNED.name})`,
      `${spreadOf(hot(before), '%')} → ${spreadOf(hot(after), '%')}`,
      null,
    );
    // The table as shipped: 0006's take-over index covers what heartbeats and completes change.
    const shipped = results.get(SHIPPED_TABLE) ?? [];
    sheet.goal(
      `WAL per run and HOT updates, ${caseName}, ${SHIPPED_TABLE.name}`,
      `reported (${TUNED.name} → ${SHIPPED_TABLE.name})`,
      `${spreadOf(wal(after), 'bytes')}, ${spreadOf(hot(after), '%')} HOT → ${spreadOf(wal(shipped), 'bytes')}, ${spreadOf(hot(shipped), '%')} HOT`,
      null,
    );
  }
};
