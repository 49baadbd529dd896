import { DECLARED_JOBS, DYNAMIC_HANDLER, occurrenceId, runKeyOf, TENANTS } from '../chaos/scheduler/scheduler-chaos.catalogue';
import { parseSchedulerChaosArguments } from '../chaos/scheduler/scheduler-chaos.config';
import { planFaults } from '../chaos/scheduler/scheduler-chaos.faults';
import {
  expectedOccurrences,
  type FaultEvent,
  type InstanceLife,
  judge,
  type LeaseRow,
  type OccurrenceVerdict,
  type RunEvidence,
  type VerdictInput,
} from '../chaos/scheduler/scheduler-chaos.verdict';

/**
 * The scheduler chaos run's verdict is only worth its zeros if each class catches what it says:
 * here every class is produced on evidence made up for the purpose, against a baseline where
 * every due occurrence ran once.
 */
const FROM = 1_800_000_000_000; // a multiple of every interval of the catalogue
const TO = FROM + 10_000;
const EVERY = 'chaos.every-5s';
const AT = FROM + 5_000;

let sequence = 0;
const lives: InstanceLife[] = ['i0.1', 'i1.1', 'i2.1', 'i3.1'].map((nodeId, slot) => ({
  nodeId,
  slot,
  proxied: slot < 2,
  spawnedMs: FROM - 60_000,
  readyMs: FROM - 50_000,
  stops: [],
}));

const run = (code: string, runKey: string, scheduledAt: number, fields: Partial<RunEvidence> = {}): RunEvidence => ({
  runId: `run-${++sequence}`,
  nodeId: 'i0.1',
  pid: 1,
  kind: code === DYNAMIC_HANDLER ? 'dynamic' : 'scheduled',
  code,
  runKey,
  scheduledAt,
  fencingToken: 100 + sequence,
  idempotencyKey: `key ${code} ${runKey}`,
  trigger: 'schedule',
  plannedMs: 200,
  startedMs: scheduledAt + 10,
  wallStartedMs: scheduledAt + 10,
  endedMs: scheduledAt + 210,
  outcome: 'completed',
  inJournal: true,
  inDb: true,
  ...fields,
});

const row = (code: string, runKey: string, fields: Partial<LeaseRow> = {}): LeaseRow => ({
  code,
  runKey,
  status: 'SUCCESS',
  data: null,
  lastError: null,
  attempts: 1,
  fencingToken: 1,
  ownerId: 'i0.1',
  lockKey: `key ${code} ${runKey}`,
  modifiedMs: AT + 300,
  finishedMs: AT + 300,
  ...fields,
});

/** Every due occurrence ran once and succeeded; `change` edits the evidence of one occurrence. */
const baseline = (): VerdictInput => {
  const { due } = expectedOccurrences({ windowFromMs: FROM, windowToMs: TO, scheduleChanges: [] });
  return {
    windowFromMs: FROM,
    windowToMs: TO,
    collectedMs: TO + 60_000,
    runs: due.map((occurrence) => run(occurrence.code, occurrence.runKey, occurrence.scheduledAt)),
    rows: due.map((occurrence) => row(occurrence.code, occurrence.runKey)),
    instances: lives.map((life) => ({ ...life, stops: [] })),
    faults: [],
    scheduleChanges: [],
  };
};

/** The baseline without the runs and row of `chaos.every-5s` at AT, plus what the test gives. */
const withOccurrence = (runs: RunEvidence[], rowFields?: Partial<LeaseRow>, faults: FaultEvent[] = []): VerdictInput => {
  const input = baseline();
  const key = runKeyOf(AT);
  input.runs = input.runs.filter((candidate) => !(candidate.code === EVERY && candidate.runKey === key)).concat(runs);
  input.rows = input.rows.filter((candidate) => !(candidate.code === EVERY && candidate.runKey === key));
  if (rowFields) input.rows.push(row(EVERY, key, rowFields));
  input.faults = faults;
  return input;
};

const verdictOf = (input: VerdictInput): OccurrenceVerdict => {
  const found = judge(input).occurrences.find((occurrence) => occurrence.id === occurrenceId({ code: EVERY, runKey: runKeyOf(AT) }));
  if (!found) throw new Error('occurrence not judged');
  return found;
};

const everyRun = (fields: Partial<RunEvidence>): RunEvidence => run(EVERY, runKeyOf(AT), AT, fields);

describe('scheduler chaos verdict', () => {
  it('expects every multiple of each interval in the window, per tenant and per dynamic schedule', () => {
    const { due, grey } = expectedOccurrences({ windowFromMs: FROM, windowToMs: TO, scheduleChanges: [] });
    const count = (code: string) => due.filter((occurrence) => occurrence.code === code).length;
    expect(count('chaos.every-5s')).toBe(3);
    expect(count('chaos.jitter-3s')).toBe(4);
    expect(count('chaos.tenants-10s')).toBe(2 * TENANTS.length);
    expect(due.filter((occurrence) => occurrence.code === DYNAMIC_HANDLER).map((occurrence) => occurrence.runKey)).toContain(
      `schedule=report%206s%2Facme ${new Date(FROM + 6_000).toISOString()}`,
    );
    // A schedule added during the run is due only once it is: before that, not at all.
    expect([...due, ...grey].some((occurrence) => occurrence.scheduleId === 'late-3s')).toBe(false);
    expect(DECLARED_JOBS.length).toBe(5);
  });

  it('passes the baseline: every occurrence once', () => {
    const verdict = judge(baseline());
    expect(verdict.failures).toEqual([]);
    expect(verdict.figures.byClass.once).toBe(verdict.figures.occurrencesDue);
    expect(verdict.ok).toBe(true);
  });

  it('justifies a take-over after the first owner was SIGKILLed mid-run', () => {
    const first = everyRun({ nodeId: 'i1.1', fencingToken: 10, endedMs: undefined, outcome: undefined });
    const second = everyRun({ nodeId: 'i2.1', fencingToken: 11, trigger: 'take-over', startedMs: AT + 20_000, endedMs: AT + 20_200 });
    const input = withOccurrence([first, second], { fencingToken: 11, attempts: 2 }, [{ kind: 'kill', nodeId: 'i1.1', atMs: AT + 100, mode: 'mid-run' }]);
    input.instances[1].killedMs = AT + 100;
    const verdict = verdictOf(input);
    expect(verdict.class).toBe('rerun-justified');
    expect(verdict.concurrentPairs).toBe(0);
    expect(judge(input).failures).toEqual([]);
  });

  it('tells a re-run of a completed run whose completion the database did not get from one nothing explains', () => {
    const completed = everyRun({ nodeId: 'i1.1', fencingToken: 10, endedMs: AT + 800 });
    const again = everyRun({ nodeId: 'i2.1', fencingToken: 11, trigger: 'take-over', startedMs: AT + 40_000, endedMs: AT + 40_200 });
    const cut: FaultEvent = { kind: 'outage', nodeIds: ['i1.1'], fromMs: AT + 500, toMs: AT + 5_000 };
    const unrecorded = verdictOf(withOccurrence([completed, again], {}, [cut]));
    expect(unrecorded.class).toBe('rerun-justified');
    expect(unrecorded.rerunCauses).toEqual(['completion not recorded']);
    // An outage long over when it completed explains nothing.
    const earlier = verdictOf(withOccurrence([completed, again], {}, [{ ...cut, fromMs: AT - 5_000, toMs: AT - 2_000 }]));
    expect(earlier.class).toBe('rerun-unjustified');
    expect(earlier.detail).toContain('completed its run, and nothing at its instance as it completed explains');
  });

  it('does not justify a re-run after a graceful shutdown, nor one without trigger take-over', () => {
    const first = everyRun({ nodeId: 'i1.1', fencingToken: 10, outcome: 'aborted', reason: 'JobShutdownError' });
    const second = everyRun({ nodeId: 'i2.1', fencingToken: 11, trigger: 'take-over', startedMs: AT + 20_000, endedMs: AT + 20_200 });
    const afterTerm = verdictOf(withOccurrence([first, second], {}, [{ kind: 'term', nodeId: 'i1.1', atMs: AT + 100, mode: 'random', closed: true }]));
    expect(afterTerm.class).toBe('rerun-unjustified');
    expect(afterTerm.detail).toContain('(it had: SIGTERM (random))');

    const scheduled = everyRun({ nodeId: 'i2.1', fencingToken: 11, startedMs: AT + 20_000, endedMs: AT + 20_200 });
    const afterKill = verdictOf(withOccurrence([first, scheduled], {}, [{ kind: 'kill', nodeId: 'i1.1', atMs: AT + 100, mode: 'mid-run' }]));
    expect(afterKill.class).toBe('rerun-unjustified');
    expect(afterKill.detail).toContain("ran with trigger 'schedule', not 'take-over'");
  });

  it('counts two handlers active at once as concurrent, and a stale owner starting after the new one', () => {
    const fresh = everyRun({ nodeId: 'i1.1', fencingToken: 12, trigger: 'take-over', startedMs: AT + 900, endedMs: AT + 1_900 });
    const stale = everyRun({ nodeId: 'i3.1', fencingToken: 9, startedMs: AT + 1_000, endedMs: AT + 1_001, outcome: 'aborted', reason: 'LostJobLeaseError' });
    const input = withOccurrence([fresh, stale], {}, [{ kind: 'clock-step', nodeId: 'i3.1', atMs: AT - 5_000, offsetMs: 25_000 }]);
    const verdict = verdictOf(input);
    expect(verdict.concurrentPairs).toBe(1);
    expect(verdict.class).toBe('rerun-unjustified');
    expect(verdict.detail).toContain('i3.1 (token 9) started 100 ms after i1.1 (token 12): it ran under a lease already taken from it');
    expect(verdict.detail).toContain('(it had: clock step 25000 ms)');
    expect(judge(input).figures.concurrent).toBe(1);
  });

  it('does not count as concurrent a stopped owner that ran again only to stop within the wake grace', () => {
    const stopped = everyRun({ nodeId: 'i1.1', fencingToken: 10, startedMs: AT, endedMs: AT + 31_500, outcome: 'aborted', reason: 'LostJobLeaseError' });
    const takeOver = everyRun({ nodeId: 'i2.1', fencingToken: 11, trigger: 'take-over', startedMs: AT + 20_000, endedMs: AT + 40_000 });
    const input = withOccurrence([stopped, takeOver], {}, [{ kind: 'stop', nodeId: 'i1.1', fromMs: AT + 500, toMs: AT + 30_000, mode: 'long' }]);
    input.instances[1].stops = [{ fromMs: AT + 500, toMs: AT + 30_000 }];
    const verdict = verdictOf(input);
    expect({ class: verdict.class, concurrentPairs: verdict.concurrentPairs, frozenOverlaps: verdict.frozenOverlaps }).toEqual({
      class: 'rerun-justified',
      concurrentPairs: 0,
      frozenOverlaps: 1,
    });
    // Woken, its work returned first (its timer fell due while it was stopped): frozen too.
    Object.assign(stopped, { outcome: 'completed', reason: undefined, endedMs: AT + 30_010 });
    expect(verdictOf(input).frozenOverlaps).toBe(1);
    // Woken, it ran on for longer than the grace without noticing: concurrent.
    stopped.endedMs = AT + 35_000;
    expect(verdictOf(input).concurrentPairs).toBe(1);
  });

  it('justifies a stale owner that starts as it wakes from a SIGSTOP and is aborted at once (frozen between check and start), only then', () => {
    const takeOver = everyRun({ nodeId: 'i2.1', fencingToken: 11, trigger: 'take-over', startedMs: AT + 14_000, endedMs: AT + 16_000 });
    const frozen = everyRun({
      nodeId: 'i1.1',
      fencingToken: 10,
      startedMs: AT + 14_100,
      endedMs: AT + 14_108,
      outcome: 'aborted',
      reason: 'LostJobLeaseError',
    });
    const input = withOccurrence([frozen, takeOver], {}, [{ kind: 'stop', nodeId: 'i1.1', fromMs: AT + 50, toMs: AT + 14_080, mode: 'short' }]);
    input.instances[1].stops = [{ fromMs: AT + 50, toMs: AT + 14_080 }];
    const verdict = verdictOf(input);
    expect(verdict.class).toBe('rerun-justified');
    expect(verdict.detail).toContain('frozen between its lease');
    // Not aborted at once: it ran on under a lease already taken from it.
    Object.assign(frozen, { endedMs: AT + 17_000, outcome: 'completed', reason: undefined });
    expect(verdictOf(input).class).toBe('rerun-unjustified');
  });

  it('tells a silent loss from a recorded one, and judges each record by the faults', () => {
    expect(verdictOf(withOccurrence([])).class).toBe('lost-silently');
    expect(verdictOf(withOccurrence([], { status: 'SUCCESS' })).class).toBe('success-without-run');
    expect(verdictOf(withOccurrence([], { status: 'RUNNING' })).class).toBe('recorded-unjustified');
    expect(verdictOf(withOccurrence([], { status: 'FAIL', data: { released: true, reason: 'not run' } })).detail).toContain(
      'given back unrun by i0.1 ("not run") for no reason the evidence shows',
    );
    // Its owner still ran the previous occurrence (an overrun): an overlap given back.
    const overlap = withOccurrence([], { status: 'FAIL', data: { released: true, reason: 'not run' } });
    overlap.runs.push(run(EVERY, runKeyOf(AT - 5_000), AT - 5_000, { startedMs: AT - 4_990, endedMs: AT + 2_000 }));
    expect(verdictOf(overlap).givenBack).toBe('while it still ran the previous occurrence (overlap)');
    expect(verdictOf(withOccurrence([], { status: 'FAIL', data: { outcome: 'missed', missed: 1 } })).class).toBe('recorded-unjustified');

    const abandoned = { status: 'FAIL' as const, ownerId: 'i1.1', data: { abandoned: true, attempts: 1, error: { code: 'JOB_ABANDONED' } } };
    const handedOver = verdictOf(withOccurrence([], abandoned, [{ kind: 'term', nodeId: 'i1.1', atMs: AT - 300, mode: 'before-instant', closed: true }]));
    expect(handedOver.class).toBe('recorded-unjustified');
    expect(handedOver.detail).toContain('neither crashed nor stalled (it had: SIGTERM (before-instant))');

    // A take-over job's occurrence abandoned after one crash, the fleet up: never taken over.
    const once = { ...abandoned, attempts: 1, modifiedMs: AT - 1_000 };
    const neverTakenOver = verdictOf(withOccurrence([], once, [{ kind: 'kill', nodeId: 'i1.1', atMs: AT - 500, mode: 'mid-run' }]));
    expect(neverTakenOver.class).toBe('recorded-unjustified');
    expect(neverTakenOver.detail).toContain('never taken over');
    // After maxAttempts owners it is what the job asked for.
    expect(verdictOf(withOccurrence([], { ...once, attempts: 3 }, [{ kind: 'kill', nodeId: 'i1.1', atMs: AT - 500, mode: 'mid-run' }])).class).toBe(
      'recorded-justified',
    );

    // Missed while every instance was down: the record is justified.
    const allDown = withOccurrence([], { status: 'FAIL', data: { outcome: 'missed', missed: 1 } });
    for (const life of allDown.instances) life.stops = [{ fromMs: AT - 1_000, toMs: AT + 1_000 }];
    expect(verdictOf(allDown).class).toBe('recorded-justified');
  });

  it('counts apart a loss whose only cause is the known limit: every busy instance SIGKILLed before its overlap check', () => {
    // i0.1 busy with the previous occurrence, then SIGKILLed 30 s later; i1.1 stopped; i2.1 down; i3.1's clock stepped.
    const input = withOccurrence([], undefined, [{ kind: 'clock-step', nodeId: 'i3.1', atMs: AT - 6_000, offsetMs: 25_000 }]);
    const previous = input.runs.find((candidate) => candidate.code === EVERY && candidate.runKey === runKeyOf(AT - 5_000));
    if (previous) previous.endedMs = AT + 2_000;
    input.instances[0].killedMs = AT + 30_000;
    input.instances[1].stops = [{ fromMs: AT - 20_000, toMs: AT + 20_000 }];
    input.instances[2].killedMs = AT - 1_000;
    const judged = verdictOf(input);
    expect(judged.class).toBe('lost-check-killed');
    expect(judged.detail).toContain('i0.1 while it still ran the previous occurrence (overlap), SIGKILLed 30000 ms after it');
    expect(judge(input).failures).toEqual([]);
    // Killed after its check was due: the check should have recorded it.
    input.instances[0].killedMs = AT + 62_000;
    expect(verdictOf(input).class).toBe('lost-silently');
    // An idle healthy instance could have run it.
    input.instances[0].killedMs = AT + 30_000;
    input.instances[2].killedMs = undefined;
    expect(verdictOf(input).class).toBe('lost-silently');
  });

  it('justifies a skipped-overlap record only when no healthy instance could run the occurrence', () => {
    const skipped = { status: 'FAIL' as const, ownerId: 'i0.1', data: { outcome: 'skipped-overlap' } };
    // Only i0.1 was busy (its previous run overran): the three others were idle.
    const oneBusy = withOccurrence([], skipped);
    oneBusy.runs.push(run(EVERY, runKeyOf(AT - 5_000), AT - 5_000, { startedMs: AT - 4_990, endedMs: AT + 2_000 }));
    const unjustified = verdictOf(oneBusy);
    expect(unjustified.class).toBe('recorded-unjustified');
    expect(unjustified.detail).toContain('although i1.1, i2.1, i3.1 could run it');
    // i0.1 busy, i1.1 stopped, i2.1 down, i3.1's clock stepped past the instant: nobody could.
    const nobody = withOccurrence([], skipped, [{ kind: 'clock-step', nodeId: 'i3.1', atMs: AT - 6_000, offsetMs: 25_000 }]);
    nobody.runs.push(run(EVERY, runKeyOf(AT - 5_000), AT - 5_000, { startedMs: AT - 4_990, endedMs: AT + 2_000 }));
    nobody.instances[1].stops = [{ fromMs: AT - 20_000, toMs: AT + 20_000 }];
    nobody.instances[2].killedMs = AT - 1_000;
    const justified = verdictOf(nobody);
    expect(justified.class).toBe('recorded-justified');
    expect(justified.detail).toContain('i0.1 while it still ran the previous occurrence (overlap); i3.1 after a wall-clock step');
  });

  it("judges a removed dynamic schedule's late runs by whether the instance could have seen the removal", () => {
    const removedMs = FROM - 30_000;
    const input = baseline();
    input.windowFromMs = FROM - 60_000;
    input.scheduleChanges = [{ scheduleId: 'report 6s/acme', change: 'removed', sentMs: removedMs, doneMs: removedMs + 20 }];
    const key = runKeyOf(FROM + 6_000, { scheduleId: 'report 6s/acme' });
    const late = run(DYNAMIC_HANDLER, key, FROM + 6_000, { nodeId: 'i2.1', scheduleId: 'report 6s/acme' });
    input.runs = input.runs.filter((candidate) => !(candidate.code === DYNAMIC_HANDLER && candidate.runKey === key)).concat(late);
    const judged = () => judge(input).occurrences.find((occurrence) => occurrence.runKey === key);
    expect(judged()?.class).toBe('unexpected-run');
    // Stopped from before the removal until just before the run: it could not have seen it.
    input.instances[2].stops = [{ fromMs: removedMs - 1_000, toMs: FROM + 5_000 }];
    expect(judged()?.class).toBe('once');
    // Up from the removal, a run 6.5 s after it: seen by then, unless terminated backends failed its change polls.
    input.instances[2].stops = [];
    input.scheduleChanges = [{ scheduleId: 'report 6s/acme', change: 'removed', sentMs: FROM - 500, doneMs: FROM - 480 }];
    expect(judged()?.class).toBe('unexpected-run');
    input.faults = [1_000, 3_000].map((offset) => ({ kind: 'backend-kill' as const, atMs: FROM + offset, nodeIds: ['i2.1'], terminated: 2 }));
    expect(judged()?.class).toBe('once');
  });

  it("justifies a crashed holder's occurrence left RUNNING when its schedule was removed before any take-over", () => {
    const input = baseline();
    const at = FROM + 6_000;
    const key = runKeyOf(at, { scheduleId: 'report 6s/acme' });
    input.runs = input.runs.filter((candidate) => candidate.runKey !== key);
    input.rows = input.rows.filter((candidate) => candidate.runKey !== key);
    input.rows.push(row(DYNAMIC_HANDLER, key, { status: 'RUNNING', ownerId: 'i2.1', modifiedMs: at - 3_000, finishedMs: null }));
    input.scheduleChanges = [{ scheduleId: 'report 6s/acme', change: 'removed', sentMs: at + 9_000, doneMs: at + 9_020 }];
    input.windowToMs = at + 60_000;
    const judged = () => judge(input).occurrences.find((occurrence) => occurrence.runKey === key);
    expect(judged()?.class).toBe('recorded-unjustified');
    input.faults = [{ kind: 'kill', nodeId: 'i2.1', atMs: at - 2_000, mode: 'before-instant' }];
    expect(judged()?.class).toBe('recorded-justified');
  });

  it('plans every fault kind of the ci preset inside the window, reproducibly', () => {
    const { config } = parseSchedulerChaosArguments(['--preset', 'ci', '--seed', '5']);
    const plan = planFaults(config);
    expect(plan).toEqual(planFaults(config));
    expect(new Set(plan.map((fault) => fault.kind))).toEqual(
      new Set([
        'long-stall',
        'short-stall',
        'kill-mid-run',
        'kill-before-instant',
        'term-random',
        'term-before-instant',
        'backend-kill',
        'outage',
        'clock-step',
      ]),
    );
    for (const fault of plan) expect(fault.atMs).toBeLessThanOrEqual(config.windowMs - config.quietEndMs);
    expect(parseSchedulerChaosArguments(['--minutes', '2']).config.windowMs).toBe(120_000);
  });
});
