import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

/**
 * The README's Quick start runs as written: examples/quick-start (the README's snippets are its
 * files, test/unit/readme-snippets.test.ts) boots twice, as two processes with a pool each, on one
 * PostgreSQL database, exactly as `npm run quick-start` starts it. Each occurrence of its job runs
 * on one of them, once; /metrics serves the library's metrics and /health says up.
 */

const root = resolve(__dirname, '../..');
const JOB = 'reports.heartbeat';
const RAN = /ran the occurrence due at (\S+)/g;

interface Instance {
  name: string;
  port: number;
  child: ChildProcess;
  output: () => string;
  exited: Promise<void>;
}

const freePort = (): Promise<number> =>
  new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });

/** As package.json's `quick-start` script runs it (ts-node, tsconfig-paths, the example's tsconfig). */
const start = (name: string, port: number, databaseUrl: string): Instance => {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'examples/quick-start/src/main.ts'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), NO_COLOR: '1', TS_NODE_PROJECT: 'examples/quick-start/tsconfig.json' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  return { name, port, child, output: () => output, exited };
};

const get = async (instance: Instance, path: string) => {
  const response = await fetch(`http://127.0.0.1:${instance.port}${path}`, { signal: AbortSignal.timeout(10_000) });
  return { status: response.status, type: response.headers.get('content-type') ?? '', body: await response.text() };
};

const until = async <T>(what: string, read: () => Promise<T | undefined>, timeoutMs: number, instances: Instance[]): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = instances.find((instance) => instance.child.exitCode !== null || instance.child.signalCode !== null);
    if (dead) throw new Error(`${dead.name} exited (${dead.child.exitCode ?? dead.child.signalCode}) while waiting for ${what}:\n${dead.output()}`);
    const value = await read().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}:\n${instances.map((instance) => `--- ${instance.name}\n${instance.output()}`).join('\n')}`,
      );
    }
    await new Promise((wait) => setTimeout(wait, 250));
  }
};

/** The due instants each instance's job logged, in the order logged. */
const ranBy = (instance: Instance): string[] => [...instance.output().matchAll(RAN)].map((match) => match[1]);

let database: TestDatabase;
let instances: Instance[] = [];

beforeAll(async () => {
  // Migrated once beforehand, as a deployment runs them: the two instances' `migrationsRun` then find nothing to do.
  database = await createTestDatabase();
  const [a, b] = [await freePort(), await freePort()];
  instances = [start('instance A', a, database.url), start('instance B', b, database.url)];
}, 60_000);

afterAll(async () => {
  for (const instance of instances) instance.child.kill('SIGTERM');
  const stopped = Promise.all(instances.map((instance) => instance.exited));
  const timer = setTimeout(() => instances.forEach((instance) => instance.child.kill('SIGKILL')), 15_000);
  await stopped;
  clearTimeout(timer);
  await database?.drop();
}, 60_000);

it('boots twice and runs each occurrence once across both; /metrics and /health answer', async () => {
  const started = Date.now();
  // Booted: each answers HTTP (ts-node compiles the sources on a loaded machine: generous).
  for (const instance of instances) await until(`${instance.name} answering`, () => get(instance, '/health').then(() => true), 90_000, instances);
  const bothUp = new Date().toISOString();
  const bootMs = Date.now() - started;

  // An occurrence due while both instances ran, recorded SUCCESS.
  const succeeded = await until(
    'an occurrence run while both instances were up',
    async () => {
      const rows = await database.sql<{ runKey: string; status: string; attempts: number }>(
        `SELECT "runKey", status, attempts FROM "job-scheduler" WHERE code = $1 AND status = 'SUCCESS' AND "runKey" > $2 ORDER BY "runKey"`,
        [JOB, bothUp],
      );
      return rows.length >= 1 ? rows : undefined;
    },
    30_000,
    instances,
  );

  const ranMs = Date.now() - started;
  // Both competed for the occurrences: one ran each, the other counted it skipped-locked.
  const count = (bodies: string[], outcome: string) =>
    bodies
      .map((body) => new RegExp(`^scheduled_job_runs_total\\{job="${JOB}",outcome="${outcome}"\\} (\\d+)$`, 'm').exec(body)?.[1])
      .reduce((sum, value) => sum + Number(value ?? 0), 0);
  const metrics = await until(
    'a skipped-locked occurrence in /metrics',
    async () => {
      const responses = await Promise.all(instances.map((instance) => get(instance, '/metrics')));
      return count(
        responses.map((response) => response.body),
        'skipped-locked',
      ) >= 1
        ? responses
        : undefined;
    },
    15_000,
    instances,
  );
  for (const response of metrics) {
    expect(response.status).toBe(200);
    expect(response.type).toMatch(/^text\/plain/);
    for (const name of ['job_lease_operations_total', 'job_lease_operation_duration_seconds', 'scheduled_job_runs_total', 'scheduled_job_duration_seconds']) {
      expect(response.body).toContain(`# TYPE ${name} `);
    }
  }
  expect(
    count(
      metrics.map((response) => response.body),
      'succeeded',
    ),
  ).toBeGreaterThanOrEqual(1);

  for (const instance of instances) {
    const health = await get(instance, '/health');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'ok', info: { jobs: { status: 'up', database: 'up', jobs: { [JOB]: { stale: false } } } } });
  }

  process.stdout.write(
    `\nquick-start: both instances answered after ${(bootMs / 1000).toFixed(1)} s, an occurrence ran after ${(ranMs / 1000).toFixed(1)} s\n`,
  );
  // Checked last, when a duplicate run would have had the most time to show.
  const ran = instances.flatMap(ranBy);
  // Never twice: no due instant was run by both instances, nor twice by one.
  expect(ran.filter((instant, index) => ran.indexOf(instant) !== index)).toEqual([]);
  for (const row of succeeded) {
    expect(row.attempts).toBe(1);
    expect(ran.filter((instant) => instant === row.runKey)).toHaveLength(1);
  }
}, 150_000);
