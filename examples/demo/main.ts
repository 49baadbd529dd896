import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { JobScheduler, JobSchedulerMigrations } from '../../src/features';
import { startPostgres } from '../../test/support/postgres-server';
import type { DemoMessage } from './demo-messages';

/**
 * npm run demo: three nodes (three processes, each a Nest application) run the same declared
 * job every 2 s on one PostgreSQL; each tick runs on one node. One node is killed mid-run: the
 * tick it held is reclaimed after its lease by another node. Ends after ~30 s with a summary.
 */
const DURATION_MS = Number(process.env.DEMO_DURATION_MS ?? 30_000);
const KILL_AFTER_MS = DURATION_MS / 3;
const STATUS_ORDER = ['SUCCESS', 'FAIL', 'RUNNING'];
const NODES = ['node-a', 'node-b', 'node-c'];

const time = () => new Date().toISOString().slice(11, 19);
const say = (line: string) => process.stdout.write(`${time()}  ${line}\n`);

const sql = async <T>(url: string, text: string): Promise<T[]> => {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end();
  }
};

const prepareDatabase = async (serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> => {
  const name = `demo_${randomBytes(4).toString('hex')}`;
  await sql(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const dataSource = new DataSource({ type: 'postgres', url: url.toString(), entities: [JobScheduler], migrations: [...JobSchedulerMigrations] });
  await dataSource.initialize();
  await dataSource.runMigrations();
  await dataSource.query(`CREATE TABLE demo_side_effect ("idempotencyKey" text PRIMARY KEY, tick text NOT NULL, node text NOT NULL)`);
  await dataSource.destroy();
  return { url: url.toString(), drop: () => sql(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => undefined) };
};

const main = async () => {
  const server = await startPostgres();
  say(`PostgreSQL: ${server.kind}`);
  const database = await prepareDatabase(server.url);
  const children = new Map<string, ChildProcess>();
  const outcomes = new Map<string, Map<string, string>>();
  const running = new Map<string, string>();
  let killed: { node: string; tick: string } | undefined;
  const reclaims: { node: string; tick: string; fencingToken: number }[] = [];
  let startedAt = Number.POSITIVE_INFINITY;
  const ready = new Set<string>();

  const report = (tick: string) => {
    const byNode = outcomes.get(tick);
    if (!byNode) return;
    if (NODES.some((node) => children.has(node) && !byNode.has(node))) return;
    const winner = [...byNode].find(([, outcome]) => outcome !== 'skipped-locked' && outcome !== 'skipped-overlap');
    const others = [...byNode].filter(([node]) => node !== winner?.[0]).map(([node, outcome]) => `${node} ${outcome}`);
    say(`tick ${tick.slice(11, 19)}  ${winner ? `won by ${winner[0]} (${winner[1]})` : 'no winner'}; ${others.join(', ')}`);
    outcomes.delete(tick);
  };

  const onMessage = (message: DemoMessage) => {
    if (message.type === 'ready') {
      ready.add(message.node);
      if (ready.size === NODES.length) {
        startedAt = Date.now();
        say(`${NODES.join(', ')} are up; running for ${DURATION_MS / 1000} s`);
      }
    } else if (message.type === 'started') {
      running.set(message.node, message.tick);
      if (!killed && Date.now() - startedAt > KILL_AFTER_MS) {
        killed = { node: message.node, tick: message.tick };
        children.get(message.node)?.kill('SIGKILL');
        children.delete(message.node);
        const byNode = outcomes.get(message.tick) ?? new Map<string, string>();
        outcomes.set(message.tick, byNode.set(message.node, 'killed mid-run'));
        say(`killed ${message.node} (SIGKILL) while it ran tick ${message.tick.slice(11, 19)}: its lease stays RUNNING until it expires (3 s)`);
      }
    } else if (message.type === 'outcome') {
      const byNode = outcomes.get(message.tick) ?? new Map<string, string>();
      byNode.set(message.node, message.outcome);
      outcomes.set(message.tick, byNode);
      report(message.tick);
    } else if (message.type === 'reclaimed') {
      reclaims.push(message);
      say(
        `${message.node} reclaimed tick ${message.tick.slice(11, 19)} after its holder's lease expired (fencing token ${message.fencingToken}) and finished it`,
      );
    }
  };

  try {
    for (const node of NODES) {
      const child = fork(join(__dirname, 'demo-node.ts'), [], {
        execArgv: ['-r', 'ts-node/register/transpile-only'],
        env: { ...process.env, DEMO_NODE: node, DEMO_DATABASE_URL: database.url },
      });
      child.on('message', (message) => onMessage(message as DemoMessage));
      children.set(node, child);
    }
    say(`starting ${NODES.join(', ')} (three processes, each a Nest application)`);
    while (Date.now() < startedAt + DURATION_MS) await new Promise((resolve) => setTimeout(resolve, 200));
  } finally {
    await Promise.all(
      [...children.values()].map(
        (child) =>
          new Promise<void>((resolve) => {
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
          }),
      ),
    );
  }

  const statuses = await sql<{ status: string; count: string }>(
    database.url,
    `SELECT status, count(*) FROM "job-scheduler" WHERE code = 'demo.sync-orders' GROUP BY status`,
  );
  const [checks] = await sql<{ double_success: string; double_effects: string; effects: string }>(
    database.url,
    `SELECT
       (SELECT count(*) FROM (SELECT "runKey" FROM "job-scheduler" WHERE status = 'SUCCESS' GROUP BY code, "runKey" HAVING count(*) > 1) d) AS double_success,
       (SELECT count(*) FROM (SELECT tick FROM demo_side_effect GROUP BY tick HAVING count(*) > 1) e) AS double_effects,
       (SELECT count(*) FROM demo_side_effect) AS effects`,
  );
  const ticks = statuses.reduce((sum, row) => sum + Number(row.count), 0);
  const byStatus = statuses
    .sort((a, b) => STATUS_ORDER.indexOf(a.status) - STATUS_ORDER.indexOf(b.status))
    .map((row) => `${row.status} ${row.count}`)
    .join(', ');
  const duplicates = Number(checks.double_success) + Number(checks.double_effects);
  say(`summary: ticks ${ticks} (${byStatus}), side effects ${checks.effects}, reclaimed after a kill ${reclaims.length}, duplicates ${duplicates}`);
  if (statuses.some((row) => row.status === 'FAIL')) {
    say('(FAIL: a tick interrupted by the final shutdown; its lease was released, and it did not run twice)');
  }
  await database.drop();
  await server.stop();
  if (duplicates > 0) process.exitCode = 1;
};

main().catch((error: unknown) => {
  process.stderr.write(`demo failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
