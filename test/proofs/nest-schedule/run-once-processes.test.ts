import { join } from 'node:path';
import { ProcessGroup, waitUntil } from '../../support/fleet';
import { sleep } from '../../support/lease-nodes';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

/**
 * Three Nest applications in three processes, each with ScheduleModule and a provider whose
 * `@Cron('*\/2 * * * * *') @RunOnce()` method records its runs: for ~10 s, every tick runs
 * exactly once across the three (one SUCCESS lease per tick, keyed by its due instant), the two
 * other processes skip it, and the method sees its execution through currentJobExecution().
 */
const ROOT = join(__dirname, '..', '..', '..');
const FIXTURE = join(__dirname, '..', '..', 'integration', 'fixtures', 'run-once-node.child.ts');
const CODE = 'tick-recorder.record';
const TICK_MS = 2_000;
const RUN_MS = 10_000;

let database: TestDatabase;
const started: ProcessGroup[] = [];

const startNode = (name: string, mode = 'run'): ProcessGroup => {
  const node = ProcessGroup.node(name, FIXTURE, {
    cwd: ROOT,
    env: { ...process.env, RUN_ONCE_DATABASE_URL: database.url, RUN_ONCE_NODE: name, RUN_ONCE_MODE: mode, NO_COLOR: '1' },
  });
  started.push(node);
  return node;
};

const event = (node: ProcessGroup, name: string) => node.lines.find((line) => line.event === name);

const waitFor = (what: string, condition: () => boolean, timeoutMs: number, nodes: ProcessGroup[]): Promise<void> =>
  waitUntil(condition, { what, timeoutMs, intervalMs: 100, details: () => nodes.map((node) => `--- ${node.name}\n${node.output}`).join('\n') });

beforeAll(async () => {
  database = await createTestDatabase();
  await database.sql(`CREATE TABLE run_once_ticks (
    node text NOT NULL, name text, scheduled_at timestamptz, started_at timestamptz, idempotency_key text,
    fencing_token bigint, trigger text, has_signal boolean, aborted boolean, recorded_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
});

afterAll(async () => {
  for (const node of started) node.kill();
  await database.drop();
});

it('runs every tick of a @Cron exactly once across three applications in separate processes', async () => {
  const nodes = ['node-1', 'node-2', 'node-3'].map((name) => startNode(name));
  await waitFor('three applications ready', () => nodes.every((node) => event(node, 'ready') || node.child.exitCode !== null), 120_000, nodes);
  expect(nodes.map((node) => event(node, 'boot-failed'))).toEqual([undefined, undefined, undefined]);
  const allReadyAt = Math.max(...nodes.map((node) => event(node, 'ready')?.at as number));
  await sleep(RUN_MS);
  const stoppedAt = Date.now();
  for (const node of nodes) node.signal('SIGTERM');
  const exitCodes = await Promise.all(nodes.map(async (node) => (await node.exited).code));
  expect(exitCodes).toEqual([0, 0, 0]);

  const runs = await database.sql<{
    node: string;
    name: string;
    scheduled_at: Date;
    started_at: Date;
    idempotency_key: string;
    fencing_token: string;
    trigger: string;
    has_signal: boolean;
    aborted: boolean;
  }>('SELECT * FROM run_once_ticks ORDER BY scheduled_at');
  const leases = await database.sql<{ runKey: string; status: string; lockKey: string; fencingToken: string; ownerId: string; name: string }>(
    `SELECT "runKey", status, "lockKey", "fencingToken", "ownerId", name FROM "job-scheduler" WHERE code = $1 ORDER BY "runKey"`,
    [CODE],
  );
  const ticks = runs.map((run) => run.scheduled_at.toISOString());

  // Each tick ran once, and it is named by its due instant: an even second.
  expect(new Set(ticks).size).toBe(ticks.length);
  for (const run of runs) expect(run.scheduled_at.getTime() % TICK_MS).toBe(0);

  // Every tick due while all three were up ran (generous margins for a loaded machine).
  const expected: string[] = [];
  for (let due = Math.ceil((allReadyAt + 1_000) / TICK_MS) * TICK_MS; due <= stoppedAt - 2_500; due += TICK_MS) {
    expected.push(new Date(due).toISOString());
  }
  expect(expected.length).toBeGreaterThanOrEqual(3);
  expect(ticks).toEqual(expect.arrayContaining(expected));

  // One SUCCESS lease per tick, keyed by the due instant; the method saw that lease's execution.
  expect(leases.map((lease) => lease.runKey)).toEqual(ticks);
  expect(new Set(leases.map((lease) => lease.status))).toEqual(new Set(['SUCCESS']));
  for (const [index, run] of runs.entries()) {
    expect({
      name: run.name,
      trigger: run.trigger,
      idempotencyKey: run.idempotency_key,
      fencingToken: run.fencing_token,
      hasSignal: run.has_signal,
      aborted: run.aborted,
      lateByMs: run.started_at.getTime() - run.scheduled_at.getTime() >= 0,
    }).toEqual({
      name: CODE,
      trigger: 'schedule',
      idempotencyKey: leases[index].lockKey,
      fencingToken: leases[index].fencingToken,
      hasSignal: true,
      aborted: false,
      lateByMs: true,
    });
    expect(leases[index].name).toBe('TickRecorder.record');
  }

  // Every process fired every tick in the window: the two that did not run it skipped it.
  const skips = new Map<string, number>();
  for (const node of nodes) {
    for (const match of node.output.matchAll(/tick-recorder\.record (\S+Z): another instance runs or ran it, skipped/g)) {
      skips.set(match[1], (skips.get(match[1]) ?? 0) + 1);
    }
  }
  for (const tick of expected) expect({ tick, skips: skips.get(tick) ?? 0 }).toEqual({ tick, skips: 2 });

  const winners = new Map<string, number>();
  for (const run of runs) winners.set(run.node, (winners.get(run.node) ?? 0) + 1);
  process.stdout.write(
    `run-once: ${runs.length} ticks run, ${expected.length} in the checked window, ${[...skips.values()].reduce((a, b) => a + b, 0)} skips; runs per node ${JSON.stringify(Object.fromEntries(winners))}\n`,
  );
}, 180_000);

it('refuses to boot a @RunOnce method without @Cron, with a clear message', async () => {
  const node = startNode('not-a-cron', 'not-a-cron');
  expect((await node.exited).code).toBe(3);
  expect(event(node, 'boot-failed')).toEqual({
    node: 'not-a-cron',
    event: 'boot-failed',
    name: 'RunOnceError',
    code: 'NOT_A_CRON',
    message:
      '@RunOnce on NotACron.tick: the method is not a @Cron method of @nestjs/schedule. @RunOnce names each tick by the instant its cron expression made it due; put @Cron(...) on the method too',
  });
}, 120_000);
