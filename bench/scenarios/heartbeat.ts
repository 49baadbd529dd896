import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createBenchDatabase } from '../support/bench-database';
import { deferred, sleep } from '../support/deferred';
import { formatNumber, formatSpread } from '../support/format';
import { type LeaseHolder, libraryHolder, RAW_HOLDER } from '../support/heartbeat-holders';
import { UNNAMED, SHIPPED } from '../support/library-variants';
import { interleave } from '../support/interleave';
import { LIBRARY_STATEMENTS } from '../support/raw-variants';
import { percentile, spread } from '../support/statistics';
import { onWireStatement } from '../support/wire-statements';
import type { Scenario } from './scenario';

const LEASES = 1_000;
const HEARTBEAT_MS = 1_000;
const LEASE_MS = 10_000;
/** TypeORM's (and pg's) default pool size. */
const POOL_SIZE = 10;
const HEARTBEAT_TEXT = LIBRARY_STATEMENTS.heartbeat('', '').text;
const SIZES = {
  full: { windowMs: 2_000, holders: [libraryHolder(SHIPPED), libraryHolder(UNNAMED), RAW_HOLDER], maxRepetitions: Infinity },
  /** Each repetition takes 1,000 leases and one interval to settle: two of them are enough for a smoke test. */
  quick: { windowMs: 300, holders: [libraryHolder(SHIPPED)], maxRepetitions: 2 },
};

interface HeartbeatRun {
  statementsPerSecond: number;
  /** Node CPU in the steady window, as a share of one core. */
  cpuShare: number;
  cpuMicrosPerBeat: number;
  eventLoopDelayP99Ms: number;
  /**
   * How much later than one interval after the previous beat (or the lease start) each beat was
   * sent: in the steady state (1,000 leases held), and while the leases were still being acquired.
   */
  steadyLatenessMs: number[];
  rampLatenessMs: number[];
  rampMs: number;
}

/**
 * Holds LEASES leases, waits one interval for every heartbeat to be running, then measures a
 * steady window: statements sent, Node CPU, event-loop delay. Lateness is taken over the whole
 * run, each beat's send time against the one before it (or the lease's start), and split: a beat
 * sent before the last lease was acquired plus one interval belongs to the ramp, when the early
 * leases' beats queue in the pool behind the acquires of the late ones.
 */
const measureHeartbeats = async (holder: LeaseHolder, windowMs: number): Promise<HeartbeatRun> => {
  const starts = new Map<string, number>();
  const beats = new Map<string, number[]>();
  let statements = 0;
  const stopTap = onWireStatement((statement) => {
    statements++;
    if (statement.text !== HEARTBEAT_TEXT) return;
    const id = String(statement.values[0]);
    const sent = beats.get(id);
    if (sent) sent.push(performance.now());
    else beats.set(id, [performance.now()]);
  });
  const allStarted = deferred();
  const finish = deferred();
  const rampStarted = performance.now();
  try {
    const holding = holder.hold({
      leases: LEASES,
      leaseMs: LEASE_MS,
      heartbeatMs: HEARTBEAT_MS,
      until: finish.promise,
      onStarted: (id) => {
        starts.set(id, performance.now());
        if (starts.size === LEASES) allStarted.resolve();
      },
    });
    // A failure while starting must not leave the wait below hanging.
    holding.catch(() => allStarted.resolve());
    await allStarted.promise;
    const rampEnded = performance.now();
    const rampMs = rampEnded - rampStarted;
    await sleep(HEARTBEAT_MS);

    const loop = monitorEventLoopDelay({ resolution: 10 });
    const windowStatements = statements;
    const cpuBefore = process.cpuUsage();
    const windowStarted = performance.now();
    loop.enable();
    await sleep(windowMs);
    loop.disable();
    const elapsedMs = performance.now() - windowStarted;
    const cpu = process.cpuUsage(cpuBefore);
    const sent = statements - windowStatements;
    finish.resolve();
    await holding;

    const steadyLatenessMs: number[] = [];
    const rampLatenessMs: number[] = [];
    for (const [id, started] of starts) {
      let previous = started;
      for (const at of beats.get(id) ?? []) {
        (at < rampEnded + HEARTBEAT_MS ? rampLatenessMs : steadyLatenessMs).push(at - previous - HEARTBEAT_MS);
        previous = at;
      }
    }
    return {
      statementsPerSecond: sent / (elapsedMs / 1000),
      cpuShare: (cpu.user + cpu.system) / 1000 / elapsedMs,
      cpuMicrosPerBeat: (cpu.user + cpu.system) / Math.max(1, sent),
      eventLoopDelayP99Ms: loop.percentile(99) / 1e6,
      steadyLatenessMs,
      rampLatenessMs,
      rampMs,
    };
  } finally {
    finish.resolve();
    stopTap();
  }
};

export const heartbeat: Scenario = {
  name: 'heartbeat',
  title: 'Heartbeat cost (1,000 concurrent runExclusive leases, 1 s heartbeats)',
  run: async ({ quick, repetitions, cleanup, sheet, log }) => {
    const { windowMs, holders: starters, maxRepetitions } = quick ? SIZES.quick : SIZES.full;
    const runs = Math.min(repetitions, maxRepetitions);
    const database = await createBenchDatabase(cleanup);
    const context = (nodeId: string) => ({ url: database.url, nodeId, poolSize: POOL_SIZE, cleanup });
    const holders: LeaseHolder[] = [];
    for (const [index, start] of starters.entries()) holders.push(await start(context(`heartbeat-${index}`)));
    log(`heartbeat: ${holders.length} variants x ${runs} x (${LEASES} leases, ${windowMs} ms window)`);
    const results = await interleave(holders, { repetitions: runs }, (holder) => measureHeartbeats(holder, windowMs));

    const caseName = `${formatNumber(LEASES)} leases`;
    for (const [holder, runs] of results) {
      const add = (metric: string, unit: string, pick: (run: HeartbeatRun) => number) => sheet.add(caseName, holder.name, metric, unit, runs.map(pick));
      add('heartbeat statements/s', '', (run) => run.statementsPerSecond);
      add('Node CPU', '% of a core', (run) => run.cpuShare * 100);
      add('Node CPU per heartbeat', 'µs', (run) => run.cpuMicrosPerBeat);
      add('event-loop delay p99', 'ms', (run) => run.eventLoopDelayP99Ms);
      add('p99 heartbeat lateness, steady', 'ms', (run) => percentile(run.steadyLatenessMs, 99));
      add('max heartbeat lateness, steady', 'ms', (run) => Math.max(...run.steadyLatenessMs));
      add('ramp: all leases acquired after', 'ms', (run) => run.rampMs);
      add('p99 heartbeat lateness, ramp', 'ms', (run) => percentile(run.rampLatenessMs, 99));
      add('max heartbeat lateness, ramp', 'ms', (run) => Math.max(...run.rampLatenessMs));
    }
    const library = results.get(holders[0]) ?? [];
    const worst = spread(library.map((run) => Math.max(...run.steadyLatenessMs)));
    sheet.goal(
      'no heartbeat late by more than half its interval: 1,000 leases held (library, every run)',
      `max ≤ ${HEARTBEAT_MS / 2} ms`,
      formatSpread(worst, 'ms'),
      worst.max <= HEARTBEAT_MS / 2,
    );
    const rampWorst = spread(library.map((run) => Math.max(...run.rampLatenessMs)));
    sheet.goal(
      'the same while the 1,000 leases are still being acquired (library, every run)',
      `max ≤ ${HEARTBEAT_MS / 2} ms`,
      formatSpread(rampWorst, 'ms'),
      rampWorst.max <= HEARTBEAT_MS / 2,
    );
    const rate = spread(library.map((run) => run.statementsPerSecond));
    sheet.goal('heartbeat statements/s (library)', `≈ ${LEASES} (one per lease per interval)`, formatSpread(rate), null);
    const cpu = spread(library.map((run) => run.cpuShare * 100));
    sheet.goal('Node CPU (library)', 'reported', formatSpread(cpu, '% of a core'), null);
    sheet.note(
      'Lateness of a beat = its send time − the previous beat (or the lease start) − the interval: the heartbeat loop waits one interval after a beat returns, so this includes the previous beat’s round trip and any wait for a pooled connection.',
    );
    sheet.note(
      'Ramp: all 1,000 runExclusive calls start at once, so their acquires queue for the pool of 10; the first leases’ beats wait in the same queue until the last acquire is through. That is pool queueing, not heartbeat cost: it grows with the ramp time (a loaded machine) and shows for raw pg as much as for the library.',
    );
    return {
      sizes: `${formatNumber(LEASES)} leases on one node (pool of ${POOL_SIZE}), heartbeat ${HEARTBEAT_MS} ms, lease ${LEASE_MS} ms, steady window ${windowMs} ms after one interval, ${runs} interleaved repetitions`,
      variants: Object.fromEntries(holders.map((holder) => [holder.name, holder.description])),
    };
  },
};
