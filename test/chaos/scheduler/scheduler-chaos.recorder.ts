import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { JobExecution } from '../../../src/features';
import { workFor } from '../../support/abortable-work';
import { appendJsonLine, realNow } from '../../support/fleet';
import { DYNAMIC_HANDLER, runKeyOf, workMsOf, workShapeOf } from './scheduler-chaos.catalogue';
import type { InstanceMessage, JournalLine, RunEnd, RunKind, RunStart } from './scheduler-chaos.protocol';

/**
 * What every handler of an instance does, and how it is written down, independently of the
 * library: a journal line appended synchronously (it survives a SIGKILL of the next instant), and
 * a row of `chaos_runs` on a connection of the recorder's own (straight to PostgreSQL, spared by
 * the backend kills, never behind the proxy), inserted at the start and updated at the end.
 * The handler works for its planned time, honouring its signal: when it aborts, the handler
 * stops at once and throws the reason, as README tells jobs to.
 */
export class RunRecorder {
  private client: Client | undefined;
  /** Statements in order on one connection; a failed one is retried once on a new connection. */
  private queue: Promise<void> = Promise.resolve();
  private closed = false;
  readonly failures: string[] = [];

  constructor(
    private readonly settings: { nodeId: string; recorderUrl: string; journalFile: string; seed: number },
    private readonly send: (message: InstanceMessage) => void,
  ) {}

  journal(line: JournalLine): void {
    appendJsonLine(this.settings.journalFile, line);
  }

  /** One handler execution: recorded, worked, recorded. */
  async perform(kind: RunKind, execution: JobExecution): Promise<void> {
    const scheduleId = execution.schedule?.id;
    const code = kind === 'dynamic' ? DYNAMIC_HANDLER : execution.name;
    const tenantId = kind === 'tenant' ? execution.tenantId : undefined;
    const scheduledAt = execution.scheduledAt.getTime();
    const runKey = runKeyOf(scheduledAt, kind === 'dynamic' ? { scheduleId } : { tenantId });
    const start: RunStart = {
      runId: randomUUID(),
      nodeId: this.settings.nodeId,
      pid: process.pid,
      kind,
      code,
      runKey,
      scheduledAt,
      ...(tenantId === undefined ? {} : { tenantId }),
      ...(scheduleId === undefined ? {} : { scheduleId }),
      fencingToken: Number(execution.fencingToken),
      idempotencyKey: execution.idempotencyKey,
      trigger: execution.trigger,
      plannedMs: workMsOf(this.settings.seed, workShapeOf(code, scheduleId), code, runKey, Number(execution.fencingToken)),
      startedMs: realNow(),
      wallStartedMs: Date.now(),
    };
    this.journal({ type: 'start', ...start });
    this.send({ type: 'run-start', runId: start.runId, code, runKey, plannedMs: start.plannedMs });
    this.write(
      `INSERT INTO chaos_runs ("runId", "nodeId", "pid", "kind", "code", "runKey", "scheduledAt", "tenantId", "scheduleId",
         "fencingToken", "idempotencyKey", "trigger", "plannedMs", "startedMs", "wallStartedMs")
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
      [
        start.runId,
        start.nodeId,
        start.pid,
        kind,
        code,
        runKey,
        new Date(scheduledAt),
        tenantId ?? null,
        scheduleId ?? null,
        start.fencingToken,
        start.idempotencyKey,
        start.trigger,
        start.plannedMs,
        start.startedMs,
        start.wallStartedMs,
      ],
    );
    let end: RunEnd;
    try {
      await workFor(start.plannedMs, execution.signal);
      end = { runId: start.runId, endedMs: realNow(), outcome: 'completed' };
    } catch (error) {
      end = { runId: start.runId, endedMs: realNow(), outcome: 'aborted', reason: error instanceof Error ? error.name : String(error) };
      this.finish(end);
      throw error;
    }
    this.finish(end);
  }

  /** Waits for every queued statement (on shutdown), then closes the connection. */
  async close(): Promise<void> {
    await this.queue;
    this.closed = true;
    await this.client?.end().catch(() => undefined);
  }

  private finish(end: RunEnd): void {
    this.journal({ type: 'end', ...end });
    this.send({ type: 'run-end', runId: end.runId });
    this.write(`UPDATE chaos_runs SET "endedMs" = $2, "outcome" = $3, "reason" = $4, "dbEndedAt" = clock_timestamp() WHERE "runId" = $1`, [
      end.runId,
      end.endedMs,
      end.outcome,
      end.reason ?? null,
    ]);
  }

  private write(text: string, values: unknown[]): void {
    this.queue = this.queue.then(async () => {
      for (let attempt = 1; attempt <= 2; attempt++) {
        try {
          await (await this.connection()).query(text, values);
          return;
        } catch (error) {
          await this.client?.end().catch(() => undefined);
          this.client = undefined;
          if (attempt === 2) this.failures.push(String(error));
        }
      }
    });
  }

  private async connection(): Promise<Client> {
    if (this.closed) throw new Error('recorder closed');
    if (this.client) return this.client;
    const client = new Client({
      connectionString: this.settings.recorderUrl,
      application_name: `sched-chaos-recorder-${this.settings.nodeId}`,
      connectionTimeoutMillis: 5_000,
    });
    client.on('error', () => {
      if (this.client === client) this.client = undefined;
    });
    await client.connect();
    this.client = client;
    return client;
  }
}
