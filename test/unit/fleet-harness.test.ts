import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  appendJsonLine,
  exitWithin,
  FleetProcess,
  fleetProtocol,
  forkNode,
  GroupedChild,
  JsonLineCollector,
  ProcessGroup,
  readJsonLines,
  untilReady,
  waitUntil,
} from '../support/fleet';

/**
 * The fleet harness (test/support/fleet) that chaos, scheduler chaos, failover and the
 * multi-process integration tests share: what their verdicts rely on, checked on its own.
 */
const directory = mkdtempSync(join(tmpdir(), 'sdcorejs-fleet-harness-'));
const started: FleetProcess<{ type: 'stop' }, { type: 'ready' }>[] = [];

afterAll(() => {
  for (const member of started) member.kill();
  rmSync(directory, { recursive: true, force: true });
});

type Ready = { type: 'ready' };

/** A Node child running `script`, forked as the fleets fork theirs. */
const startChild = (name: string, script: string): FleetProcess<{ type: 'stop' }, Ready> => {
  const entry = join(directory, `${name}.js`);
  writeFileSync(entry, script);
  const outputFile = join(directory, `${name}.log`);
  const member = new FleetProcess<{ type: 'stop' }, Ready>(name, forkNode(entry, { cwd: directory, env: process.env, outputFile }), outputFile);
  started.push(member);
  return member;
};

describe('JSON lines', () => {
  it('reads back what was appended, skipping a last line cut short by a kill', () => {
    const file = join(directory, 'events.jsonl');
    appendJsonLine(file, { type: 'boot', at: 1 });
    appendJsonLine(file, { type: 'start', key: 'a' });
    appendFileSync(file, '{"type":"end","ke');
    expect(readJsonLines(file)).toEqual([
      { type: 'boot', at: 1 },
      { type: 'start', key: 'a' },
    ]);
    expect(readJsonLines(join(directory, 'missing.jsonl'))).toEqual([]);
  });

  it('collects JSON lines split across chunks, beside the plain text around them', () => {
    const collector = new JsonLineCollector();
    collector.take('[Nest] starting\n{"event":"re');
    expect(collector.lines).toEqual([]);
    collector.take(Buffer.from('ady","at":5}\nplain\n'));
    expect(collector.lines).toEqual([{ event: 'ready', at: 5 }]);
    expect(collector.text).toBe('[Nest] starting\n{"event":"ready","at":5}\nplain\n');
  });
});

describe('protocol', () => {
  it('carries settings in one environment variable', () => {
    const protocol = fleetProtocol<{ nodeId: string; seed: number }, { type: 'stop' }, Ready>('FLEET_HARNESS_TEST');
    const environment = protocol.environment({ nodeId: 'n1', seed: 7 });
    expect(Object.keys(environment)).toEqual(['FLEET_HARNESS_TEST']);
    process.env.FLEET_HARNESS_TEST = environment.FLEET_HARNESS_TEST;
    try {
      expect(protocol.settings('not started by its orchestrator')).toEqual({ nodeId: 'n1', seed: 7 });
    } finally {
      delete process.env.FLEET_HARNESS_TEST;
    }
    expect(() => protocol.settings('not started by its orchestrator')).toThrow('not started by its orchestrator');
  });
});

describe('readiness and teardown', () => {
  it('waits until a child says it is ready', async () => {
    const member = startChild('ready', "setTimeout(() => process.send({ type: 'ready' }), 100); setInterval(() => {}, 1000);");
    expect(member.ready).toBe(false);
    await untilReady([member], 10_000);
    expect(member.ready).toBe(true);
    expect(member.readyMs).toBeGreaterThanOrEqual(member.startedMs);
  });

  it('fails the wait at once when a watched child exits, and says which', async () => {
    const member = startChild('dies', "process.stderr.write('boot failed\\n'); process.exit(3);");
    const began = Date.now();
    await expect(untilReady([member], 10_000)).rejects.toThrow('dies exited while waiting for dies ready:\nboot failed\n');
    expect(Date.now() - began).toBeLessThan(5_000);
    expect(member.exit).toEqual({ code: 3, signal: null });
  });

  it('fails the wait when the time is up, with the details asked for', async () => {
    await expect(waitUntil(() => false, { what: 'never', timeoutMs: 100, intervalMs: 20, details: () => 'the outputs' })).rejects.toThrow(
      'never: not within 100 ms:\nthe outputs',
    );
  });

  it('lets a child that stops by itself exit, and SIGKILLs one that does not in time (marked first)', async () => {
    const polite = startChild('polite', "process.on('message', () => process.exit(0)); setInterval(() => {}, 1000);");
    const stubborn = startChild('stubborn', "process.on('message', () => {}); setInterval(() => {}, 1000);");
    await waitUntil(() => polite.child.connected && stubborn.child.connected, { what: 'children up', timeoutMs: 10_000, intervalMs: 20 });
    for (const member of [polite, stubborn]) member.send({ type: 'stop' });
    const marked: string[] = [];
    await exitWithin([polite, stubborn], 1_000, (member) => marked.push(member.name));
    expect(marked).toEqual(['stubborn']);
    expect(polite.exit).toEqual({ code: 0, signal: null });
    expect(stubborn.exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('SIGKILLs a stopped (SIGSTOP) child too', async () => {
    const member = startChild('stopped', 'setInterval(() => {}, 1000);');
    member.signal('SIGSTOP');
    member.kill();
    await member.exited;
    expect(member.exit?.signal).toBe('SIGKILL');
    expect(member.alive).toBe(false);
  });
});

describe('process groups', () => {
  it("runs an orchestrator to its end without reading its output as JSON lines (a report's pretty JSON)", async () => {
    const child = new GroupedChild();
    const run = await child.run(process.execPath, ['-e', 'console.log(JSON.stringify({ seed: 7, ok: true }, null, 2))'], { cwd: directory, timeoutMs: 10_000 });
    expect(run).toEqual({ exitCode: 0, signal: null, output: '{\n  "seed": 7,\n  "ok": true\n}\n' });
  });

  it('parses the JSON lines of a child that reports so, beside its log lines', async () => {
    const group = new ProcessGroup('reporter', process.execPath, ['-e', "console.log('[Nest] up'); console.log(JSON.stringify({ event: 'ready' }))"], {
      cwd: directory,
      jsonLines: true,
    });
    expect((await group.exited).code).toBe(0);
    await waitUntil(() => group.lines.length > 0, { what: 'its line', timeoutMs: 5_000, intervalMs: 20 });
    expect(group.lines).toEqual([{ event: 'ready' }]);
    expect(group.output).toContain('[Nest] up\n');
  });
});
