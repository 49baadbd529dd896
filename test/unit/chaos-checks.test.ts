import { CHAOS_PRESETS, type ChaosConfig, parseChaosArguments } from '../chaos/chaos.config';
import type { LoggedEvent } from '../chaos/chaos.event-log';
import type { ChaosEvidence, LeaseRow, WorkerEvidence } from '../chaos/chaos.evidence';
import { emptyFaultRecords, type FaultRecords } from '../chaos/chaos.faults';
import { planChaos } from '../chaos/chaos.plan';
import { resourceOf, runKeyOf, runPlanOf } from '../chaos/chaos.protocol';
import { computeFigures, reportRows } from '../chaos/chaos.report';

/**
 * The chaos run's checks are only worth their zeros if they fire on a violation: each is shown
 * here to count one, on evidence made up for the purpose.
 */
const config: ChaosConfig = { ...CHAOS_PRESETS.ci, preset: 'ci', seed: 7, codes: ['a'], ticks: 2 };
const TOKEN = '6f1c3f0e-8d1c-4a6b-9f3e-2b9a1c0d4e5f';

const lease = (tick: number, extra: Partial<LeaseRow> = {}): LeaseRow => ({
  lockKey: `key-${tick}`,
  code: 'a',
  runKey: runKeyOf(tick),
  status: 'SUCCESS',
  fencingToken: 1,
  attempts: 1,
  ownerId: 'w0.1',
  ownerToken: TOKEN,
  leaseMs: config.leaseMs,
  reclaimGapMs: null,
  ...extra,
});

const event = (fields: Record<string, unknown>): LoggedEvent => ({ at: 0, ...fields }) as LoggedEvent;

const worker = (nodeId: string, events: LoggedEvent[], extra: Partial<WorkerEvidence> = {}): WorkerEvidence => ({
  nodeId,
  slot: 0,
  clockSkewMs: 0,
  crashed: false,
  exit: 'code 0 signal null',
  outputTail: '',
  events,
  text: '',
  ...extra,
});

/** Two runs, both completed once by w0.1, their side effects in place. */
const cleanEvidence = (): ChaosEvidence => ({
  leases: [lease(0), lease(1, { ownerToken: '0b7e1c2d-3f4a-4b5c-8d6e-7f8091a2b3c4' })],
  effectsPerResource: new Map([
    [resourceOf('a', runKeyOf(0)), 1],
    [resourceOf('a', runKeyOf(1)), 1],
  ]),
  fenceLog: [
    { id: 1, resource: resourceOf('a', runKeyOf(0)), fencingToken: 1, leaseToken: 1 },
    { id: 2, resource: resourceOf('a', runKeyOf(1)), fencingToken: 1, leaseToken: 1 },
  ],
  resourceFence: new Map([
    [resourceOf('a', runKeyOf(0)), 1],
    [resourceOf('a', runKeyOf(1)), 1],
  ]),
  workers: [worker('w0.1', [event({ type: 'success', key: 'key-0', fencingToken: 1 }), event({ type: 'success', key: 'key-1', fencingToken: 1 })])],
});

const check = (evidence: ChaosEvidence, faults: FaultRecords = emptyFaultRecords()) => computeFigures(config, evidence, faults);

describe('chaos checks', () => {
  it('find nothing wrong with a clean run', () => {
    const { figures, problems } = check(cleanEvidence());
    expect(problems).toEqual([]);
    expect(figures).toMatchObject({ logicalRuns: 2, successRows: 2, doubleSuccess: 0, runsNeverFinished: 0 });
  });

  it('count a run completed by two owners', () => {
    const evidence = cleanEvidence();
    evidence.workers.push(worker('w1.1', [event({ type: 'success', key: 'key-0', fencingToken: 2 })]));
    expect(check(evidence).figures.doubleSuccess).toBe(1);
  });

  it('count two side-effect rows for one run, and a SUCCESS without its side effect', () => {
    const evidence = cleanEvidence();
    evidence.effectsPerResource.set(resourceOf('a', runKeyOf(0)), 2);
    evidence.effectsPerResource.delete(resourceOf('a', runKeyOf(1)));
    expect(check(evidence).figures).toMatchObject({ sideEffectRowsOverOne: 1, successWithoutSideEffect: 1 });
  });

  it('count a fenced write accepted after a newer one, and a resource last written by a stale owner', () => {
    const evidence = cleanEvidence();
    evidence.leases[0] = lease(0, { fencingToken: 2, attempts: 2 });
    evidence.workers[0].events[0] = event({ type: 'success', key: 'key-0', fencingToken: 2 });
    evidence.fenceLog.push(
      { id: 3, resource: resourceOf('a', runKeyOf(0)), fencingToken: 2, leaseToken: 2 },
      { id: 4, resource: resourceOf('a', runKeyOf(0)), fencingToken: 1, leaseToken: 2 },
    );
    evidence.resourceFence.set(resourceOf('a', runKeyOf(0)), 1);
    expect(check(evidence).figures).toMatchObject({ staleFencedWritesAccepted: 1, resourcesNotLastWrittenByCompleter: 1 });
  });

  it('count a paused owner that was not stopped, and one that was', () => {
    const faults = emptyFaultRecords();
    faults.pauses.push({
      nodeId: 'w2.1',
      atMs: 0,
      pausedMs: 3_000,
      held: [
        { key: 'key-0', fencingToken: 1, reclaimedWhilePaused: true },
        { key: 'key-1', fencingToken: 1, reclaimedWhilePaused: true },
      ],
    });
    const evidence = cleanEvidence();
    evidence.leases = [lease(0, { fencingToken: 2 }), lease(1, { fencingToken: 2 })];
    evidence.workers = [
      worker('w0.1', [event({ type: 'success', key: 'key-0', fencingToken: 2 }), event({ type: 'success', key: 'key-1', fencingToken: 2 })]),
      worker('w2.1', [
        event({ type: 'error', key: 'key-0', owned: true, fencingToken: 1, error: { name: 'LostJobLeaseError', message: '' }, signalAborted: true }),
        event({ type: 'error', key: 'key-1', owned: true, fencingToken: 1, error: { name: 'LostJobLeaseError', message: '' }, signalAborted: false }),
      ]),
    ];
    evidence.resourceFence = new Map([
      [resourceOf('a', runKeyOf(0)), 2],
      [resourceOf('a', runKeyOf(1)), 2],
    ]);
    expect(check(evidence, faults).figures).toMatchObject({ pausedRunsLost: 1, pausedOwnersNotStopped: 1 });
  });

  it('count an early reclaim, a crash, a leaked owner token and an unfinished run', () => {
    const evidence = cleanEvidence();
    evidence.leases[1] = lease(1, { status: 'RUNNING', reclaimGapMs: config.leaseMs - 1, ownerToken: null });
    evidence.workers.push(worker('w3.1', [], { crashed: true, text: `acquired with token ${TOKEN}` }));
    expect(check(evidence).figures).toMatchObject({ earlyReclaims: 1, workersCrashed: 1, ownerTokensInLogs: 1, runsNeverFinished: 1 });
  });

  it('turn failed figures into failed rows', () => {
    const evidence = cleanEvidence();
    evidence.workers.push(worker('w1.1', [event({ type: 'success', key: 'key-0', fencingToken: 2 })]));
    const rows = reportRows(config, check(evidence).figures);
    expect(rows.filter((row) => !row.ok).map((row) => row.id)).toEqual(expect.arrayContaining(['doubleSuccess']));
  });
});

describe('chaos plan', () => {
  const full = parseChaosArguments(['--seed', '42']).config;

  it('is a function of the seed', () => {
    expect(planChaos(full)).toEqual(planChaos({ ...full }));
    expect(planChaos(full)).not.toEqual(planChaos({ ...full, seed: 43 }));
    expect(runPlanOf(full, 'a', 3, 1)).toEqual(runPlanOf({ ...full }, 'a', 3, 1));
  });

  it('plans every fault inside the ticking window, and no backend kill while the server is down', () => {
    for (const seed of [1, 2, 3, 42, 1_540_397_759]) {
      const config = { ...full, seed };
      const plan = planChaos(config);
      const count = (kind: string) => plan.faults.filter((fault) => fault.kind === kind).length;
      expect([count('kill'), count('pause'), count('restart'), count('backend-kill')]).toEqual([config.kills, config.pauses, 1, config.backendKillBursts]);
      const restart = plan.faults.find((fault) => fault.kind === 'restart');
      for (const fault of plan.faults) {
        expect(fault.atMs).toBeGreaterThanOrEqual(0);
        if (fault.kind !== 'backend-kill') expect(fault.atMs).toBeLessThan(plan.windowMs);
        if (fault.kind === 'backend-kill' && restart) {
          expect(fault.atMs < restart.atMs - 200 || fault.atMs > restart.atMs + config.restartDownMs + 500).toBe(true);
        }
      }
      expect(plan.skewedSlot).toBeGreaterThanOrEqual(0);
      expect(plan.skewedSlot).toBeLessThan(config.workers);
    }
  });

  it('runs at least 8 processes and 500 logical runs by default', () => {
    const { config } = parseChaosArguments([]);
    expect(config.workers).toBeGreaterThanOrEqual(8);
    expect(config.codes.length * config.ticks).toBeGreaterThanOrEqual(500);
    expect(() => parseChaosArguments(['--workers', '1'])).toThrow(/at least 2/);
    expect(() => parseChaosArguments(['--bogus'])).toThrow(/unknown argument/);
  });
});
