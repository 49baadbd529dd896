import type { CleanupStack } from './cleanup';

/** A run one node has acquired and must finish. */
export interface AcquiredRun {
  /** Finalizes the run; true when it was still this node's. */
  complete(): Promise<boolean>;
}

/**
 * One node (one pool of its own) taking runs `{ code, runKey }`: the library, or a baseline
 * reimplemented in the bench. Every variant does the same work per call, so they compare.
 */
export interface LeaseNode {
  /** The run, when this node won it; undefined when another node holds or finished it. */
  acquire(code: string, runKey: string): Promise<AcquiredRun | undefined>;
}

export interface NodeContext {
  /** The scenario's database. */
  url: string;
  nodeId: string;
  poolSize: number;
  /** Closes the node's pool or Nest application when the scenario ends. */
  cleanup: CleanupStack;
}

export interface LeaseVariant {
  /** The key in results and tables. */
  name: string;
  description: string;
  start(context: NodeContext): Promise<LeaseNode>;
}

/** The lease every variant asks for: long enough that no run expires during a measurement. */
export const BENCH_LEASE_MS = 60_000;

/** Starts `count` nodes of one variant, each with its own pool. */
export const startNodes = (variant: LeaseVariant, count: number, context: Omit<NodeContext, 'nodeId'>): Promise<LeaseNode[]> =>
  Promise.all(Array.from({ length: count }, (_, index) => variant.start({ ...context, nodeId: `${variant.name}-${index}` })));
