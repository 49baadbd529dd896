/**
 * The README examples' prelude: the application's own names that the examples use without
 * defining them, as an application would have them. Nothing of this library, of Nest or of any
 * other package is declared here: an example imports those itself, as a reader must.
 *
 * The README check (test/integration/readme-examples.test.ts) compiles each TypeScript block of
 * README.md as its own module and imports from this file exactly the names below that the block
 * uses and does not declare itself. Add a name here only when an example needs an application
 * type or function that would only distract from what the example shows; keep the list short.
 *
 * This file is a module (no globals): the repository's own type check includes it harmlessly.
 */

/** The application's outbox: records a side effect once per idempotency key (see "Idempotency"). */
export declare class Outbox {
  enqueueOnce(message: { idempotencyKey: string; type: string; payload: Record<string, unknown> }, options?: { signal?: AbortSignal }): Promise<void>;
}

/** The application's command bus (for instance @nestjs/cqrs's) and one of its commands. */
export declare class CommandBus {
  execute<Result = unknown>(command: object): Promise<Result>;
}
export declare class SendReminders {
  constructor(dueAt: Date, idempotencyKey: string);
}

/** The application's work for one run: idempotent by its key, fenced by its token, stopping on the signal. */
export declare function work(idempotencyKey: string, fencingToken: number, signal: AbortSignal): Promise<void>;

/** Where the application keeps its tenants. */
export declare const tenantsRepository: { ids(): Promise<string[]> };

/** The application's per-tenant report: idempotent by its key, stopping on the signal. */
export declare class TenantReports {
  send(tenantId: string, report: { format: string; dueAt: Date }, options: { idempotencyKey: string; signal: AbortSignal }): Promise<void>;
}
