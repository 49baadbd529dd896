/**
 * The lease identity of an occurrence: code = the job name, runKey = the due instant in ISO 8601
 * (plus the tenant for per-tenant jobs). Every instance derives the same key for the same
 * occurrence; a run asked with runNow gets a key of its own that never collides with one.
 */
export const occurrenceRunKey = (scheduledAt: number, tenantId?: string): string =>
  tenantId === undefined ? new Date(scheduledAt).toISOString() : `${new Date(scheduledAt).toISOString()} tenant=${tenantId}`;

export const runNowRunKey = (askedAt: number, correlationId: string, tenantId?: string): string =>
  `run-now ${new Date(askedAt).toISOString()} ${correlationId}${tenantId === undefined ? '' : ` tenant=${tenantId}`}`;

/** The due instant an occurrence runKey names, or null for other keys (runNow, hand-written). */
export const dueInstantOf = (runKey: string): number | null => {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)(?: tenant=.*)?$/s.exec(runKey);
  return match ? Date.parse(match[1]) : null;
};

/** The due instant and tenant an occurrence runKey names, or null for other keys. */
export const occurrenceOfRunKey = (runKey: string): { scheduledAt: number; tenantId?: string } | null => {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)(?: tenant=(.*))?$/s.exec(runKey);
  if (!match) return null;
  return match[2] === undefined ? { scheduledAt: Date.parse(match[1]) } : { scheduledAt: Date.parse(match[1]), tenantId: match[2] };
};
