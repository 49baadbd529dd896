/**
 * One scheduler instance of the tenants scenario, in a process of its own: the engine on system
 * timers and the PostgreSQL lease (one DataSource), a per-tenant job whose handler waits `workMs`.
 *
 *   node -r ts-node/register/transpile-only tenant-instance.child.ts <url> <nodeId> <tenants> <workMs> <concurrency>
 *
 * Prints `ready`, then for each line `<job-name> <dueAt> <mode>` read on stdin runs that job's one
 * occurrence at dueAt (epoch ms) and prints one JSON line (TenantInstanceReport); ends on EOF.
 * Modes: `fan-out` (the scheduler) or `one-at-a-time` (the loop the scheduler ran before the
 * fan-out, on the same lease: every tenant in the directory's order, acquire, run, complete).
 */
import 'reflect-metadata';
import { createInterface } from 'node:readline';
import { DataSource } from 'typeorm';
import { JobScheduler, JobSchedulerService, type JobRunRecord } from '../../src/features';
import { JobScheduleEngine } from '../../src/features/scheduling/job-schedule-engine';
import { checkJobDeclaration } from '../../src/features/scheduling/schedule/job-declaration';
import { occurrenceRunKey } from '../../src/features/scheduling/occurrence/occurrence-keys';
import { systemTimers } from '../../src/features/scheduling/scheduler-ports';
import { onWireStatement } from './wire-statements';

export interface TenantInstanceReport {
  nodeId: string;
  succeeded: number;
  skipped: number;
  failed: number;
  /** Statements this process sent from the due instant to its last record, by kind. */
  statements: Record<string, number>;
  /** Epoch ms of this instance's last record. */
  lastRecordAt: number;
  /** Largest number of this instance's tenants running at one time. */
  peakConcurrency: number;
  /** CPU time (user + system) this process used over the occurrence. */
  cpuMs: number;
}

const [url, nodeId, tenantCount, workMs, concurrency] = process.argv.slice(2);
const tenants = Array.from({ length: Number(tenantCount) }, (_, index) => `tenant-${String(index).padStart(5, '0')}`);
const silent = { log: () => undefined, warn: () => undefined, error: (message: string) => process.stderr.write(`${message}\n`) };

const kindOf = (text: string): string => {
  if (text.startsWith('WITH candidate')) return 'claim';
  if (text.startsWith('WITH inserted')) return 'acquire';
  if (text.includes(`"status" = 'SUCCESS'`)) return 'complete';
  if (text.includes(`"status" = 'FAIL'`)) return 'fail';
  if (text.startsWith('UPDATE') && text.includes('SET "modifiedAt"')) return 'heartbeat';
  return 'other';
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The loop before the fan-out: one tenant after another, one acquire each (winner or not). */
const runOneAtATime = async (jobs: JobSchedulerService, name: string, dueAt: number): Promise<TenantInstanceReport> => {
  const statements: Record<string, number> = {};
  const stopCounting = onWireStatement(({ text }) => {
    const kind = kindOf(text);
    statements[kind] = (statements[kind] ?? 0) + 1;
  });
  await sleep(dueAt - Date.now());
  const cpuBefore = process.cpuUsage();
  let succeeded = 0;
  let skipped = 0;
  for (const tenantId of tenants) {
    const lock = await jobs.acquire({ code: name, runKey: occurrenceRunKey(dueAt, tenantId), name, reclaimFailed: false });
    if (!lock.acquired) {
      skipped++;
      continue;
    }
    await sleep(Number(workMs));
    if (await jobs.complete(lock)) succeeded++;
  }
  const cpu = process.cpuUsage(cpuBefore);
  stopCounting();
  return {
    nodeId,
    succeeded,
    skipped,
    failed: tenants.length - succeeded - skipped,
    statements,
    lastRecordAt: Date.now(),
    peakConcurrency: 1,
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
};

const runOccurrence = async (jobs: JobSchedulerService, name: string, dueAt: number): Promise<TenantInstanceReport> => {
  const declared = checkJobDeclaration(name, { every: '1h', tenancy: 'per-tenant', tenantConcurrency: Number(concurrency) });
  const declaration = { ...declared, schedule: { description: 'once', next: (after: number) => (after < dueAt ? dueAt : null) } };
  const engine = new JobScheduleEngine({ timers: systemTimers, lease: jobs, logger: silent, tenants: { listTenants: () => tenants } });
  let running = 0;
  let peakConcurrency = 0;
  engine.register({
    declaration,
    enabled: true,
    handler: async () => {
      peakConcurrency = Math.max(peakConcurrency, ++running);
      await new Promise((resolve) => setTimeout(resolve, Number(workMs)));
      running--;
    },
  });
  const statements: Record<string, number> = {};
  const records: JobRunRecord[] = [];
  let lastRecordAt = 0;
  const done = new Promise<void>((resolve) => {
    engine.onRun((record) => {
      records.push(record);
      lastRecordAt = Date.now();
      if (records.length === tenants.length) resolve();
    });
  });
  const stopCounting = onWireStatement(({ text }) => {
    const kind = kindOf(text);
    statements[kind] = (statements[kind] ?? 0) + 1;
  });
  const cpuBefore = process.cpuUsage();
  await engine.start();
  await done;
  const cpu = process.cpuUsage(cpuBefore);
  stopCounting();
  await engine.stop();
  const count = (outcome: JobRunRecord['outcome']) => records.filter((record) => record.outcome === outcome).length;
  return {
    nodeId,
    succeeded: count('succeeded'),
    skipped: count('skipped-locked'),
    failed: count('failed'),
    statements,
    lastRecordAt,
    peakConcurrency,
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
};

const main = async (): Promise<void> => {
  const dataSource = await new DataSource({ type: 'postgres', url, entities: [JobScheduler], poolSize: 10 }).initialize();
  const jobs = new JobSchedulerService(dataSource, { nodeId });
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const [name, dueAt, mode] = line.trim().split(' ');
    if (!name) continue;
    const run = mode === 'one-at-a-time' ? runOneAtATime : runOccurrence;
    process.stdout.write(`${JSON.stringify(await run(jobs, name, Number(dueAt)))}\n`);
  }
  await dataSource.destroy();
};

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
