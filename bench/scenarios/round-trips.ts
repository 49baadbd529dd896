import type { JobSchedulerService } from '../../src/features';
import { ADVISORY_LOCK } from '../support/advisory-lock-variant';
import { createBenchDatabase, openWalProbe, type WalProbe } from '../support/bench-database';
import type { CleanupStack } from '../support/cleanup';
import { formatSpread } from '../support/format';
import { interleave } from '../support/interleave';
import { type AcquiredRun, BENCH_LEASE_MS, type LeaseVariant } from '../support/lease-node';
import { type LibrarySetup, UNNAMED, SHIPPED, startLibraryNode } from '../support/library-variants';
import { DO_UPDATE, TWO_STATEMENT } from '../support/raw-variants';
import { freshRunKey } from '../support/run-keys';
import { addServerStatementTimes } from '../support/server-statement-time';
import { spread } from '../support/statistics';
import { countWireStatements } from '../support/wire-statements';
import type { Scenario } from './scenario';

/** What one operation cost: statements the driver sent, WAL the server wrote. */
interface OperationCost {
  statements: number;
  walBytes: number;
}

type Costs = Map<string, OperationCost>;

interface MeasuredVariant {
  name: string;
  description: string;
  measure(): Promise<Costs>;
}

/** The library's operations and the statements each may send. */
const LIBRARY_GOALS: ReadonlyArray<readonly [string, number]> = [
  ['acquire (winner)', 1],
  ['acquire (loser)', 1],
  ['heartbeat', 1],
  ['complete', 1],
  ['fail', 1],
  ['runExclusive, empty callback, heartbeats off', 2],
];

const CODE = 'round-trips';
const SIZES = { full: { samples: 30 }, quick: { samples: 10 } };

const check = (condition: boolean, message: string): void => {
  if (!condition) throw new Error(`round-trips: ${message}`);
};

/** Runs `body` alone and records what it cost: statements sent by this process, WAL written by the server. */
const recorder = (costs: Costs, walPosition: WalProbe) => async (operation: string, body: () => Promise<boolean>) => {
  const before = await walPosition();
  const { result, statements } = await countWireStatements(body);
  const after = await walPosition();
  costs.set(operation, { statements, walBytes: Number(after - before) });
  check(result, `${operation} did not do what it should`);
};

const measureLibrary = (jobs: JobSchedulerService, setup: LibrarySetup, walPosition: WalProbe) => async (): Promise<Costs> => {
  const costs: Costs = new Map();
  const record = recorder(costs, walPosition);
  const options = () => ({ code: CODE, runKey: freshRunKey(setup.name), leaseMs: BENCH_LEASE_MS, heartbeatMs: 0 });
  const held = options();
  const lock = await jobs.acquire(held);
  check(lock.acquired, `${setup.name} did not acquire a fresh run`);
  if (!lock.acquired) return costs;
  // The winner is measured on a run of its own, so the lease above stays for the other operations.
  await record('acquire (winner)', async () => (await jobs.acquire(options())).acquired);
  await record('acquire (loser)', async () => !(await jobs.acquire(held)).acquired);
  await record('heartbeat', () => jobs.heartbeat(lock));
  await record('complete', () => jobs.complete(lock));
  const failing = await jobs.acquire(options());
  await record('fail', async () => failing.acquired && (await jobs.fail(failing)));
  await record('runExclusive, empty callback, heartbeats off', async () => {
    const result = await jobs.runExclusive(options(), async () => 'done');
    return result.acquired && result.result === 'done';
  });
  return costs;
};

/** A baseline's acquire as winner and as loser (from a second node), and the winner's complete. */
const measureBaseline = async (variant: LeaseVariant, url: string, walPosition: WalProbe, cleanup: CleanupStack) => {
  const [winnerNode, loserNode] = await Promise.all([0, 1].map((index) => variant.start({ url, nodeId: `${variant.name}-${index}`, poolSize: 2, cleanup })));
  return async (): Promise<Costs> => {
    const costs: Costs = new Map();
    const record = recorder(costs, walPosition);
    const runKey = freshRunKey(variant.name);
    let won: AcquiredRun | undefined;
    await record('acquire (winner)', async () => (won = await winnerNode.acquire(CODE, runKey)) !== undefined);
    await record('acquire (loser)', async () => (await loserNode.acquire(CODE, runKey)) === undefined);
    await record('complete', async () => (await won?.complete()) === true);
    return costs;
  };
};

const costsOf = (runs: readonly Costs[], operation: string): OperationCost[] =>
  runs.map((costs) => costs.get(operation) ?? { statements: Number.NaN, walBytes: Number.NaN });

export const roundTrips: Scenario = {
  name: 'round-trips',
  title: 'Round trips per operation',
  run: async ({ quick, repetitions, cleanup, sheet, log }) => {
    const database = await createBenchDatabase(cleanup);
    const walPosition = await openWalProbe(database, cleanup);
    const variants: MeasuredVariant[] = [];
    for (const setup of [SHIPPED, UNNAMED]) {
      const jobs = await startLibraryNode({ url: database.url, nodeId: setup.name, poolSize: 2, cleanup }, setup);
      variants.push({ ...setup, measure: measureLibrary(jobs, setup, walPosition) });
    }
    for (const variant of [TWO_STATEMENT, DO_UPDATE, ADVISORY_LOCK]) {
      variants.push({ ...variant, measure: await measureBaseline(variant, database.url, walPosition, cleanup) });
    }
    log(`round-trips: ${variants.length} variants x ${repetitions} repetitions`);
    const results = await interleave(variants, { repetitions }, (variant) => variant.measure());

    for (const [variant, runs] of results) {
      for (const operation of runs[0]?.keys() ?? []) {
        const costs = costsOf(runs, operation);
        sheet.add(
          operation,
          variant.name,
          'statements',
          '',
          costs.map((cost) => cost.statements),
        );
        sheet.add(
          operation,
          variant.name,
          'WAL',
          'bytes',
          costs.map((cost) => cost.walBytes),
        );
      }
    }
    const library = results.get(variants[0]) ?? [];
    for (const [operation, expected] of LIBRARY_GOALS) {
      const counts = costsOf(library, operation).map((cost) => cost.statements);
      sheet.goal(
        `statements: ${operation}`,
        `${expected}`,
        counts.join(', '),
        counts.every((count) => count === expected),
      );
    }
    const loserWal = spread(costsOf(library, 'acquire (loser)').map((cost) => cost.walBytes));
    sheet.goal('acquire (loser) writes no WAL, so takes no row lock', 'median 0 bytes', formatSpread(loserWal, 'bytes'), loserWal.median === 0);

    const { samples } = quick ? SIZES.quick : SIZES.full;
    log(`round-trips: server time of each statement, ${samples} samples x ${repetitions} repetitions`);
    await addServerStatementTimes(database, { repetitions, samples }, cleanup, sheet);
    sheet.note(
      'Statements are counted at the driver (every pg Client.query of this process: what goes over the wire, whatever layer sent it); WAL is the server WAL insert position before and after (cluster-wide, so the server’s own background records show up now and then; medians absorb them). test/integration/lease.test.ts asserts the same counts through a TypeORM logger.',
    );
    sheet.note(
      '"server time" rows: the same SQL texts on one connection, unnamed, as library-unnamed sends them. Parse + analyze: PREPARE/DEALLOCATE in a server-side loop; planning and execution: EXPLAIN (ANALYZE). A named prepared statement pays parse + analyze once per connection and, once PostgreSQL settles on a generic plan (after 5 executions), no planning either.',
    );
    return {
      sizes: `each operation alone on a quiet server, ${repetitions} interleaved repetitions; a second node plays the loser for the baselines; server time: medians of ${samples} runs per repetition`,
      variants: Object.fromEntries(variants.map((variant) => [variant.name, variant.description])),
    };
  },
};
