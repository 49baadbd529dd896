import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { RunExecution } from '../../../src/features/scheduling/occurrence/run-execution';

const fields = {
  name: 'reports.hourly',
  scheduledAt: new Date(3_600_000),
  startedAt: new Date(3_600_012),
  tenantId: undefined,
  idempotencyKey: 'v2:key',
  fencingToken: 3,
  correlationId: 'c-1',
  trigger: 'schedule' as const,
};

const modulePath = join(__dirname, '../../../src/features/scheduling/occurrence/run-execution');

/** Runs `script` in a Node process of its own (with ts-node), returning what it wrote. */
const runNode = (script: string, flags: string[] = []): string =>
  execFileSync(process.execPath, [...flags, '-r', 'ts-node/register/transpile-only', '-e', script], {
    env: { ...process.env, TS_NODE_PROJECT: join(__dirname, '../../../tsconfig.json') },
    encoding: 'utf8',
  });

/** A hold whose signal is counted when read (LeaseHold makes its AbortController then). */
const countingSource = () => {
  const controller = new AbortController();
  const source = {
    reads: 0,
    get signal() {
      source.reads++;
      return controller.signal;
    },
  };
  return source;
};

describe('RunExecution: the JobExecution a handler gets', () => {
  it('has the fields of the literal it replaces, own and enumerable, in the same order (signal among them)', () => {
    const execution = new RunExecution(fields, countingSource(), undefined);
    expect(Object.keys(execution)).toEqual([
      'name',
      'scheduledAt',
      'startedAt',
      'signal',
      'tenantId',
      'idempotencyKey',
      'fencingToken',
      'correlationId',
      'trigger',
    ]);
    const schedule = { id: 's-1', data: { a: 1 }, tenantId: 't-1' };
    expect(Object.keys(new RunExecution(fields, countingSource(), schedule)).at(-1)).toBe('schedule');
    expect({ ...execution }).toEqual({ ...fields, signal: expect.any(AbortSignal) });
  });

  it('reads the signal from its hold only when asked, every time (a lost lease aborts the same signal)', () => {
    const source = countingSource();
    const execution = new RunExecution(fields, source, undefined);
    expect(source.reads).toBe(0);
    expect(execution.signal).toBe(execution.signal);
    expect(source.reads).toBe(2);
  });

  it('is made even when Object.prototype is polluted with a descriptor field (value): no run breaks on it', () => {
    // In a child process: a polluted Object.prototype would break the test runner itself.
    const script = `
      const { RunExecution } = require(${JSON.stringify(modulePath)});
      Object.prototype.value = 1;
      const made = new RunExecution(${JSON.stringify(fields)}, { signal: new AbortController().signal }, undefined);
      process.stdout.write(String(made.signal instanceof AbortSignal));
    `;
    expect(runNode(script)).toBe('true');
  });

  it('is a fast-properties object, where a literal with a getter of its own is a dictionary (V8, --allow-natives-syntax)', () => {
    // In a child process: natives syntax is a flag of the process. The literal proves the check can fail.
    const script = `
      const { RunExecution } = require(${JSON.stringify(modulePath)});
      const hold = { signal: new AbortController().signal };
      const made = new RunExecution(${JSON.stringify(fields)}, hold, undefined);
      const literal = { name: 'a', scheduledAt: 1, startedAt: 2, get signal() { return hold.signal; }, tenantId: undefined, idempotencyKey: 'k', fencingToken: 1, correlationId: 'c', trigger: 's' };
      process.stdout.write(JSON.stringify({ made: %HasFastProperties(made), literal: %HasFastProperties(literal) }));
    `;
    expect(JSON.parse(runNode(script, ['--allow-natives-syntax']))).toEqual({ made: true, literal: false });
  });
});
