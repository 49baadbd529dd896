import { ABORT_EXPLAINED_WITHIN_MS, computeFailoverFigures, errorKind, type FinalRow, type NodeEvidence } from '../failover/failover.checks';
import { clusterPorts, haproxyConfig, patroniConfig } from '../failover/failover.cluster-config';
import { modePortBase, parseFailoverArguments } from '../failover/failover.config';
import { summarizeError } from '../failover/failover.error-text';
import type { FaultRecord } from '../failover/failover.faults';
import { classifyFailure } from '../failover/failover.probe';
import { alignTick, type ErrorSummary, type LoggedEvent, runKeyOf, tickInstants } from '../failover/failover.protocol';
import { type FailoverReport, renderReport, reportRows, violationsOf } from '../failover/failover.report';
import { countTokenOccurrences, mergeLeakCounts, type TokenLeakFigures, TokenLeakDetector } from '../failover/failover.token-leaks';

/**
 * The failover proof's checks are only worth their zeros if they fire on a violation: each is
 * shown here to count one, on a small event list made up for the purpose.
 */
const T0 = runKeyOf(Date.UTC(2026, 6, 1, 0, 0, 0));
const T1 = runKeyOf(Date.UTC(2026, 6, 1, 0, 0, 0, 500));
const ID0 = '11111111-1111-4111-8111-111111111111';
const ID1 = '22222222-2222-4222-8222-222222222222';

type Event = LoggedEvent;
const at = (ms: number): number => 1_800_000_000_000 + ms;

/** One node's clean run of a tick: acquired, worked, completed. */
const cleanRun = (tick: string, acq: number, start: number, id: string, fencingToken = 1, attempt = 1): Event[] => [
  { type: 'attempt', tick, try: 1, at: at(start - 5) },
  { type: 'acquired', tick, try: 1, acq, id, fencingToken, attempt, at: at(start) },
  { type: 'callback-start', tick, acq, at: at(start) },
  { type: 'callback-end', tick, acq, outcome: 'worked', at: at(start + 1_000) },
  { type: 'completed', tick, acq, result: { acq }, at: at(start + 1_010) },
];

const notAcquired = (tick: string, when: number): Event[] => [
  { type: 'attempt', tick, try: 1, at: at(when) },
  { type: 'not-acquired', tick, try: 1, at: at(when + 2) },
];

const success = (runKey: string, id: string, fencingToken = 1, attempts = 1): FinalRow => ({
  runKey,
  id,
  status: 'SUCCESS',
  fencingToken,
  attempts,
  ownerId: 'n0',
});

/** Two ticks, each won by one node and completed once; the other node lost both races. */
const clean = (): { plannedTicks: string[]; nodes: NodeEvidence[]; finalRows: FinalRow[] } => ({
  plannedTicks: [T0, T1],
  nodes: [
    { nodeId: 'n0', events: [...cleanRun(T0, 1, 0, ID0), ...cleanRun(T1, 2, 500, ID1)] },
    { nodeId: 'n1', events: [...notAcquired(T0, 3), ...notAcquired(T1, 503)] },
  ],
  finalRows: [success(T0, ID0), success(T1, ID1)],
});

const lostLease = (reason = 'a heartbeat could not reach the database'): ErrorSummary => ({
  name: 'LostJobLeaseError',
  code: 'JOB_LEASE_LOST',
  message: `lost: ${reason}`,
  causes: [{ name: 'QueryFailedError', message: 'Connection terminated unexpectedly' }],
});

describe('failover checks', () => {
  it('find nothing wrong with a clean run', () => {
    const { figures, problems } = computeFailoverFigures(clean());
    expect(problems).toEqual([]);
    expect(figures).toMatchObject({
      ticksPlanned: 2,
      ticksCompleted: 2,
      lostTicks: 0,
      forgottenAcquisitions: 0,
      forgottenCompletions: 0,
      overlappingRuns: 0,
      reExecutions: 0,
      abortedWhileValid: 0,
      totalAborts: 0,
      fencingViolations: 0,
      acquisitions: 2,
      runExclusiveErrors: 0,
    });
  });

  it('count a planned tick without SUCCESS as lost (RUNNING, FAIL or no row)', () => {
    const input = clean();
    input.finalRows = [{ ...success(T0, ID0), status: 'RUNNING' }];
    const { figures } = computeFailoverFigures(input);
    expect(figures).toMatchObject({ lostTicks: 2, ticksCompleted: 0 });
  });

  it('count an acquisition forgotten by the cluster: acquired afresh (attempt 1, same fencing) by another node', () => {
    const input = clean();
    // n1 inserts T0 anew after n0 had been told it held it: the row n0 acquired is gone.
    input.nodes[1].events = [...cleanRun(T0, 1, 300, '33333333-3333-4333-8333-333333333333'), ...notAcquired(T1, 503)];
    input.finalRows[0] = success(T0, '33333333-3333-4333-8333-333333333333');
    const { figures } = computeFailoverFigures(input);
    expect(figures.forgottenAcquisitions).toBe(1);
    expect(figures.fencingViolations).toBe(1);
  });

  it('count an acquisition a later one did not supersede (fencing not above it), even when the final row looks like it', () => {
    const input = clean();
    // n1 takes T0 over without a higher fencing token (same row, attempt 2): n0's fencing is worthless.
    input.nodes[0].events = input.nodes[0].events.filter((event) => !(event.type === 'completed' && event.tick === T0));
    input.nodes[1].events = [...cleanRun(T0, 1, 2_000, ID0, 1, 2), ...notAcquired(T1, 503)];
    input.finalRows[0] = success(T0, ID0, 1, 2);
    const { figures } = computeFailoverFigures(input);
    expect(figures).toMatchObject({ forgottenAcquisitions: 1, fencingViolations: 1, forgottenCompletions: 0 });
  });

  it('count an acquisition whose row is missing from the final table', () => {
    const input = clean();
    input.finalRows = [success(T1, ID1)];
    const { figures } = computeFailoverFigures(input);
    expect(figures).toMatchObject({ forgottenAcquisitions: 1, forgottenCompletions: 1, lostTicks: 1 });
  });

  it('do not count a takeover with a higher fencing token as forgotten', () => {
    const input = clean();
    input.nodes[1].events = [...cleanRun(T0, 1, 2_000, ID0, 2, 2), ...notAcquired(T1, 503)];
    // n0's first run of T0 failed (FAIL), so that n1 could reclaim it.
    input.nodes[0].events = input.nodes[0].events.filter((event) => !(event.type === 'completed' && event.tick === T0));
    input.finalRows[0] = success(T0, ID0, 2, 2);
    const { figures } = computeFailoverFigures(input);
    expect(figures).toMatchObject({ forgottenAcquisitions: 0, fencingViolations: 0, reclaims: 1, reExecutions: 1, overlappingRuns: 0 });
  });

  it('count a completion after which the tick was acquired again, and one whose row is not SUCCESS', () => {
    const again = clean();
    // The final row still shows n0's completion; the acquisition after it is the violation.
    again.nodes[1].events = [...cleanRun(T0, 1, 5_000, ID0, 2, 2).filter((event) => event.type !== 'completed'), ...notAcquired(T1, 503)];
    const { figures, problems } = computeFailoverFigures(again);
    expect(figures.forgottenCompletions).toBe(1);
    expect(problems.join('\n')).toMatch(/forgotten completions: .* acquired again by n1#1/);

    const reverted = clean();
    reverted.finalRows[1] = { ...success(T1, ID1), status: 'RUNNING' };
    expect(computeFailoverFigures(reverted).figures).toMatchObject({ forgottenCompletions: 1, forgottenAcquisitions: 0 });
  });

  it('count two callbacks of one tick that overlap, and the re-execution', () => {
    const input = clean();
    input.nodes[1].events = [...cleanRun(T0, 1, 600, ID0, 2, 2), ...notAcquired(T1, 503)];
    input.finalRows[0] = success(T0, ID0, 2, 2);
    const { figures } = computeFailoverFigures(input);
    expect(figures).toMatchObject({ overlappingRuns: 1, reExecutions: 1 });
  });

  it('count a callback that never reported its end as running until the end', () => {
    const input = clean();
    input.nodes[0].events = input.nodes[0].events.filter((event) => !(event.type === 'callback-end' && event.tick === T0));
    input.nodes[1].events = [...cleanRun(T0, 1, 30_000, ID0, 2, 2), ...notAcquired(T1, 503)];
    input.finalRows[0] = success(T0, ID0, 2, 2);
    const { figures } = computeFailoverFigures(input);
    expect(figures).toMatchObject({ overlappingRuns: 1, unfinishedCallbacks: 1 });
  });

  it('count an abort no takeover explains, but not one a takeover explains, nor a shutdown', () => {
    const unexplained = clean();
    unexplained.nodes[0].events.splice(3, 0, { type: 'abort', tick: T0, acq: 1, duringCallback: true, reason: lostLease(), at: at(400) });
    expect(computeFailoverFigures(unexplained).figures).toMatchObject({ abortedWhileValid: 1, totalAborts: 1 });

    const explained = clean();
    explained.nodes[0].events = [
      ...cleanRun(T0, 1, 0, ID0).slice(0, 3),
      { type: 'abort', tick: T0, acq: 1, duringCallback: true, reason: lostLease('another owner took the run over'), at: at(25_000) },
      { type: 'callback-end', tick: T0, acq: 1, outcome: 'aborted', at: at(25_001) },
      ...cleanRun(T1, 2, 500, ID1),
    ];
    // The takeover is logged a few milliseconds after the abort it caused: still explained.
    explained.nodes[1].events = [...cleanRun(T0, 1, 25_000 + ABORT_EXPLAINED_WITHIN_MS - 50, ID0, 2, 2), ...notAcquired(T1, 503)];
    explained.finalRows[0] = success(T0, ID0, 2, 2);
    expect(computeFailoverFigures(explained).figures).toMatchObject({ abortedWhileValid: 0, totalAborts: 1, overlappingRuns: 0 });

    // A takeover long after the abort (the lease expired since) does not explain it.
    const late = clean();
    late.nodes[0].events = [
      ...cleanRun(T0, 1, 0, ID0).slice(0, 3),
      { type: 'abort', tick: T0, acq: 1, duringCallback: true, reason: lostLease(), at: at(400) },
      { type: 'callback-end', tick: T0, acq: 1, outcome: 'aborted', at: at(401) },
      ...cleanRun(T1, 2, 500, ID1),
    ];
    late.nodes[1].events = [...cleanRun(T0, 1, 25_000, ID0, 2, 2), ...notAcquired(T1, 503)];
    late.finalRows[0] = success(T0, ID0, 2, 2);
    expect(computeFailoverFigures(late).figures).toMatchObject({ abortedWhileValid: 1, totalAborts: 1, forgottenAcquisitions: 0 });

    const shutdown = clean();
    shutdown.nodes[0].events.splice(3, 0, {
      type: 'abort',
      tick: T0,
      acq: 1,
      duringCallback: true,
      reason: { name: 'JobShutdownError', code: 'JOB_SHUTDOWN', message: 'shutting down' },
      at: at(400),
    });
    expect(computeFailoverFigures(shutdown).figures).toMatchObject({ abortedWhileValid: 0, totalAborts: 1 });
  });

  it('count fencing tokens that do not grow from one acquisition of a tick to the next', () => {
    const input = clean();
    input.nodes[0].events = [...cleanRun(T0, 1, 0, ID0, 5).filter((event) => event.type !== 'completed'), ...cleanRun(T1, 2, 500, ID1)];
    input.nodes[1].events = [...cleanRun(T0, 1, 2_000, ID0, 4, 2), ...notAcquired(T1, 503)];
    input.finalRows[0] = success(T0, ID0, 4, 2);
    const { figures } = computeFailoverFigures(input);
    expect(figures.fencingViolations).toBe(1);
    expect(figures.forgottenAcquisitions).toBe(1);
  });

  it('group the errors thrown to callers by phase, name, code and cause, and collect the codes', () => {
    const input = clean();
    input.nodes[1].events.unshift(
      {
        type: 'attempt-error',
        tick: T0,
        try: 1,
        phase: 'acquire',
        error: { name: 'QueryFailedError', code: '57P01', message: 'terminating', causes: [{ name: 'error', code: '57P01', message: 'terminating' }] },
        at: at(1),
      },
      { type: 'attempt-error', tick: T0, try: 2, phase: 'run', error: lostLease(), at: at(2) },
    );
    const { figures } = computeFailoverFigures(input);
    expect(figures.runExclusiveErrors).toBe(2);
    expect(figures.runExclusiveErrorsByKind).toEqual({
      'acquire: QueryFailedError 57P01 <- error 57P01': 1,
      'run: LostJobLeaseError JOB_LEASE_LOST <- QueryFailedError "Connection terminated unexpectedly"': 1,
    });
    expect(figures.codesSeen).toEqual({ '57P01': 2, JOB_LEASE_LOST: 1 });
    expect(errorKind({ name: 'Error', message: 'boom\nmore' })).toBe('Error "boom"');
  });
});

describe('failover report', () => {
  const leaks = (total: number): TokenLeakFigures => ({
    byPlace: total ? { 'abort-reason.json': total } : {},
    inFiles: 0,
    total,
    unidentifiedUuids: 0,
    unidentifiedByPlace: {},
  });
  const fault: FaultRecord = {
    kind: 'crash',
    at: 0,
    oldLeader: 'm0',
    newLeader: 'm1',
    failoverMs: 10_400,
    probeFailures: { 'connect: Connection terminated unexpectedly': 9 },
    problems: [],
  };

  it('marks every broken invariant, and only those', () => {
    const { figures } = computeFailoverFigures({ ...clean(), finalRows: [success(T0, ID0)] });
    const rows = reportRows(figures, leaks(2), [fault], ['n3 (1)']);
    expect(violationsOf(rows).map((line) => line.split(':')[0])).toEqual([
      'lost ticks (planned, no SUCCESS)',
      'forgotten acquisitions',
      'forgotten completions',
      'owner-token leaks',
      'node processes that crashed',
    ]);
    expect(violationsOf(reportRows(computeFailoverFigures(clean()).figures, leaks(0), [fault], []))).toEqual([]);
  });

  it('prints FAIL in sync mode and only reports in async mode', () => {
    const { figures } = computeFailoverFigures({ ...clean(), finalRows: [] });
    const rows = reportRows(figures, leaks(0), [fault], []);
    const report = {
      mode: 'sync',
      seed: 1,
      durationSeconds: 90,
      tree: 'abc',
      config: { nodes: 4, tickMs: 500, leaseMs: 20_000, heartbeatMs: 2_000, workMinMs: 500, workMaxMs: 3_000, faults: ['crash'] },
      rows,
      ok: false,
      violations: violationsOf(rows),
      problems: [],
    } as unknown as FailoverReport;
    expect(renderReport(report)).toMatch(/sync mode: FAILED/);
    expect(renderReport(report)).toMatch(/\| lost ticks \(planned, no SUCCESS\) \| 2 \| 0 \| FAIL \|/);
    expect(renderReport(report)).toMatch(/crash m0→m1 10\.4 s/);
    const asynchronous = renderReport({ ...report, mode: 'async', ok: true });
    expect(asynchronous).toMatch(/async mode: reported as measured/);
    expect(asynchronous).not.toMatch(/FAIL/);
  });
});

describe('owner-token leak detection', () => {
  const TOKEN = '6f1c3f0e-8d1c-4a6b-9f3e-2b9a1c0d4e5f';
  const LEASE = '0b7e1c2d-3f4a-4b5c-8d6e-7f8091a2b3c4';

  it('finds a known token in the JSON of an error deep in a cause chain, and nothing in a clean one', () => {
    const detector = new TokenLeakDetector();
    detector.addToken(TOKEN);
    detector.addLeaseId(LEASE);
    const driverError = Object.assign(new Error('Connection terminated unexpectedly'), { parameters: [LEASE, TOKEN] });
    detector.scanError('abort-reason', new Error(`lease ${LEASE} lost`, { cause: new Error('wrapped', { cause: driverError }) }));
    expect(detector.counts().byPlace).toEqual({ 'abort-reason.cause2.json': 1 });
    detector.scanError('clean', new Error(`lease ${LEASE} lost`));
    expect(Object.keys(detector.counts().byPlace)).toEqual(['abort-reason.cause2.json']);
  });

  it('finds a token in a message, a stack, printed output and TypeORM driverError chains, in any case', () => {
    const detector = new TokenLeakDetector();
    detector.addToken(TOKEN);
    detector.scanText('console', `owner ${TOKEN.toUpperCase()}`);
    detector.scanError('run-exclusive-error', Object.assign(new Error('query failed'), { driverError: new Error(`token ${TOKEN}`) }));
    const places = detector.counts().byPlace;
    expect(places.console).toBe(1);
    expect(places['run-exclusive-error.cause1.message']).toBe(1);
    expect(places['run-exclusive-error.cause1.stack']).toBe(1);
  });

  it('counts UUIDs it cannot place apart (an acquire that threw never returned its token)', () => {
    const detector = new TokenLeakDetector();
    detector.addLeaseId(LEASE);
    detector.scanError('run-exclusive-error', Object.assign(new Error('acquire failed'), { parameters: ['v2:key', TOKEN, LEASE] }));
    expect(detector.counts()).toMatchObject({ byPlace: {}, unidentifiedUuids: 1, unidentifiedByPlace: { 'run-exclusive-error.json': 1 } });
  });

  it('counts occurrences of tokens in a file text, and adds up the counts of every node', () => {
    expect(countTokenOccurrences(`a ${TOKEN} b ${TOKEN} c ${LEASE}`, [TOKEN])).toBe(2);
    expect(countTokenOccurrences(`a ${TOKEN}`, [])).toBe(0);
    const node = { byPlace: { console: 1 }, unidentifiedUuids: 2, unidentifiedByPlace: { 'run-exclusive-error.json': 2 } };
    expect(mergeLeakCounts([node, node], 3)).toEqual({
      byPlace: { console: 2 },
      inFiles: 3,
      total: 5,
      unidentifiedUuids: 4,
      unidentifiedByPlace: { 'run-exclusive-error.json': 4 },
    });
  });

  it('survives errors with cycles and bigints', () => {
    const looped = Object.assign(new Error('looped'), { fencingToken: 12n }) as Error & { self?: unknown };
    looped.self = looped;
    (looped as { cause?: unknown }).cause = looped;
    const detector = new TokenLeakDetector();
    expect(() => detector.scanError('x', looped)).not.toThrow();
    expect(summarizeError(looped)).toEqual({ name: 'Error', message: 'looped' });
  });
});

describe('failover error summaries and probe classes', () => {
  it('summarize the chain below an error with its codes', () => {
    const pgError = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    const typeorm = Object.assign(new Error('terminating connection due to administrator command'), {
      name: 'QueryFailedError',
      code: '57P01',
      driverError: pgError,
    });
    const lost = Object.assign(new Error('lost', { cause: typeorm }), { name: 'LostJobLeaseError', code: 'JOB_LEASE_LOST' });
    expect(summarizeError(lost)).toEqual({
      name: 'LostJobLeaseError',
      code: 'JOB_LEASE_LOST',
      message: 'lost',
      causes: [
        { name: 'QueryFailedError', code: '57P01', message: 'terminating connection due to administrator command' },
        { name: 'Error', code: '57P01', message: 'terminating connection due to administrator command' },
      ],
    });
  });

  it('classify what a client meets through HAProxy', () => {
    expect(classifyFailure('connect', new Error('Connection terminated unexpectedly'))).toBe('connect: Connection terminated unexpectedly');
    expect(classifyFailure('query', Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' }))).toBe(
      'query: 25006 cannot execute INSERT in a read-only transaction',
    );
  });
});

describe('failover configuration', () => {
  it('runs both modes with at least 4 nodes and one fault of each kind by default', () => {
    const config = parseFailoverArguments([], '/tmp/results');
    expect(config.modes).toEqual(['sync', 'async']);
    expect(config.nodes).toBeGreaterThanOrEqual(4);
    expect(config.faults).toEqual(['crash', 'lagging-crash', 'switchover']);
    expect(config.portBase).toBeGreaterThanOrEqual(61_000);
    expect(parseFailoverArguments(['--mode', 'async', '--nodes', '6', '--seed', '9', '--port-base', '62000', '--stall-ms', '8000'], '/r')).toMatchObject({
      modes: ['async'],
      nodes: 6,
      seed: 9,
      portBase: 62_000,
      lagStallMs: 8_000,
    });
    expect(() => parseFailoverArguments(['--mode', 'quorum'], '/r')).toThrow(/sync, async or both/);
    expect(() => parseFailoverArguments(['--nodes', '1'], '/r')).toThrow(/at least 2/);
    expect(() => parseFailoverArguments(['--faults', 'crash,meteor'], '/r')).toThrow(/meteor/);
    expect(() => parseFailoverArguments(['--bogus'], '/r')).toThrow(/unknown argument/);
  });

  it('gives each mode ports of its own, at or above the base', () => {
    const config = parseFailoverArguments([], '/r');
    const sync = clusterPorts(modePortBase(config, 'sync'), 3);
    const asynchronous = clusterPorts(modePortBase(config, 'async'), 3);
    const all = [sync, asynchronous].flatMap((ports) => [ports.proxy, ports.etcdClient, ports.etcdPeer, ...ports.members.flatMap((m) => [m.rest, m.postgres])]);
    expect(new Set(all).size).toBe(all.length);
    expect(Math.min(...all)).toBeGreaterThanOrEqual(61_000);
  });

  it('sets synchronous_mode in the bootstrap DCS configuration, and routes HAProxy by /primary', () => {
    const ports = clusterPorts(61_000, 3);
    const input = { scope: 's', member: ports.members[0], etcdClientPort: ports.etcdClient, memberDir: '/d/m0', dataDir: '/d/m0/data', binDir: '/bin' };
    const sync = JSON.parse(patroniConfig({ ...input, mode: 'sync' })) as { bootstrap: { dcs: Record<string, unknown> } };
    const asynchronous = JSON.parse(patroniConfig({ ...input, mode: 'async' })) as { bootstrap: { dcs: Record<string, unknown> } };
    expect(sync.bootstrap.dcs).toMatchObject({ ttl: 10, loop_wait: 1, retry_timeout: 5, synchronous_mode: true });
    expect(asynchronous.bootstrap.dcs.synchronous_mode).toBe(false);
    const proxy = haproxyConfig(ports);
    expect(proxy).toContain('option httpchk GET /primary');
    expect(proxy).toContain('http-check expect status 200');
    expect(proxy).toContain('on-marked-down shutdown-sessions');
    expect(proxy).toContain(`server m2 127.0.0.1:${ports.members[2].postgres} maxconn 200 check port ${ports.members[2].rest}`);
  });

  it('names ticks by their aligned instant', () => {
    expect(alignTick(Date.UTC(2026, 0, 1, 0, 0, 0, 1), 500)).toBe(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    expect(alignTick(Date.UTC(2026, 0, 1), 500)).toBe(Date.UTC(2026, 0, 1));
    expect(tickInstants(0, 1_500, 500).map(runKeyOf)).toEqual([
      '1970-01-01T00:00:00.000Z',
      '1970-01-01T00:00:00.500Z',
      '1970-01-01T00:00:01.000Z',
      '1970-01-01T00:00:01.500Z',
    ]);
  });
});
