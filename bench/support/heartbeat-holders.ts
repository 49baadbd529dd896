import { DEFAULT_STATEMENT_TIMEOUT_MS, monotonicNow, provenUntil } from '../../src/features/job-scheduler/run/lease-deadline';
import { LeaseHold } from '../../src/features/job-scheduler/run/lease-hold';
import type { AcquireRow } from '../../src/features/job-scheduler/job-scheduler.sql';
import type { NodeContext } from './lease-node';
import { type LibrarySetup, startLibraryNode } from './library-variants';
import { acquiredRun, acquireParameters, LIBRARY_STATEMENTS, rawQuery, startRawPool } from './raw-variants';
import { freshRunKey } from './run-keys';

export const HEARTBEAT_CODE = 'heartbeat';

export interface HoldRequest {
  leases: number;
  leaseMs: number;
  heartbeatMs: number;
  /** Called with the run id when a lease's work begins (its heartbeat has just started). */
  onStarted(id: string): void;
  /** The work of every lease: it ends when this settles. */
  until: Promise<void>;
}

/** Holds `leases` leases with heartbeats until `until` settles; resolves once all are finished. */
export interface LeaseHolder {
  name: string;
  description: string;
  hold(request: HoldRequest): Promise<void>;
}

/** runExclusive of the library, set up one way or another. */
export const libraryHolder =
  (setup: LibrarySetup) =>
  async (context: NodeContext): Promise<LeaseHolder> => {
    const jobs = await startLibraryNode(context, setup);
    return {
      name: setup.name,
      description: setup.description,
      hold: async ({ leases, leaseMs, heartbeatMs, onStarted, until }) => {
        await Promise.all(
          Array.from({ length: leases }, async () => {
            const runKey = freshRunKey(setup.name);
            const result = await jobs.runExclusive({ code: HEARTBEAT_CODE, runKey, leaseMs, heartbeatMs }, async (lease) => {
              onStarted(lease.id);
              await until;
            });
            if (!result.acquired) throw new Error(`${setup.name}: a fresh run was not acquired`);
          }),
        );
      },
    };
  };

/**
 * The baseline: raw pg with the library's statements and the library's own heartbeat loop
 * (LeaseHold), so only the path from the loop to the wire differs.
 */
export const RAW_HOLDER = async (context: NodeContext): Promise<LeaseHolder> => {
  const query = rawQuery(startRawPool(context), false);
  return {
    name: 'raw',
    description: "raw pg: the library's statements and LeaseHold loop, no Nest/TypeORM",
    hold: async ({ leases, leaseMs, heartbeatMs, onStarted, until }) => {
      await Promise.all(
        Array.from({ length: leases }, async () => {
          const parameters = { ...acquireParameters(context.nodeId, HEARTBEAT_CODE, freshRunKey('raw')), leaseMs };
          const row = acquiredRun(await query<AcquireRow>(LIBRARY_STATEMENTS.acquire(parameters)));
          if (!row) throw new Error('raw: a fresh run was not acquired');
          const beat = async () => (await query(LIBRARY_STATEMENTS.heartbeat(row.id, parameters.ownerToken))).length === 1;
          const hold = new LeaseHold(
            { leaseId: row.id, leaseMs, heartbeatMs, heldUntil: provenUntil(monotonicNow(), leaseMs), statementTimeoutMs: DEFAULT_STATEMENT_TIMEOUT_MS },
            { heartbeat: beat, finalize: async () => true },
          ).start();
          onStarted(row.id);
          await until;
          await hold.stop();
          await query(LIBRARY_STATEMENTS.complete(row.id, parameters.ownerToken, null));
        }),
      );
    },
  };
};
