import { sleep } from '../support/lease-nodes';
import { calls, eventually, useDynamicFleet } from '../integration/scheduling/dynamic/dynamic-nodes';

/** Dynamic schedules at 1,000, every 2 s, on three instances: a proof of `npm run test:proofs` (about a minute). */
const fleet = useDynamicFleet();
const { nodes, start } = fleet;

describe('dynamic schedules at scale', () => {
  it('every occurrence of 1,000 schedules runs once across three instances', async () => {
    const SCHEDULES = 1_000;
    const [a] = [await start('a'), await start('b'), await start('c')];
    // Every outcome of every instance (their `runs` keep the latest 1,000 only).
    const outcomes: { node: string; key: string; outcome: string; errorCode?: string; error: string }[] = [];
    for (const node of nodes) {
      node.schedules.onRun((run) => {
        outcomes.push({
          node: node.name,
          key: `${run.scheduleId} ${run.scheduledAt.toISOString()}`,
          outcome: run.outcome,
          errorCode: run.errorCode,
          error: String(run.error),
        });
      });
    }
    // Written through SQL as a bulk seed would be; the instances find them by their change poll.
    await fleet.database.sql(
      `INSERT INTO "job-schedule" ("id", "handler", "everyMs", "version")
       SELECT 'bulk-' || lpad(n::text, 4, '0'), 'reports.tenant-report', 2000, nextval('"job-schedule_version_seq"') FROM generate_series(1, $1::int) AS n`,
      [SCHEDULES],
    );
    await eventually(() => a.schedules.runs.length > 0, 10_000, 'the first runs');
    const firstDue = Math.ceil((Date.now() + 500) / 2_000) * 2_000;
    const measured = [new Date(firstDue).toISOString(), new Date(firstDue + 2_000).toISOString()];
    await sleep(firstDue + 2_000 + 2_500 - Date.now());
    await Promise.all(nodes.map((node) => node.schedules.idle()));
    const inWindow = calls.filter((call) => measured.includes(call.scheduledAt));
    const keys = inWindow.map((call) => `${call.scheduleId} ${call.scheduledAt}`);
    expect(new Set(keys).size).toBe(keys.length);
    // Every occurrence ran; for one that did not, what each instance recorded of it.
    const ran = new Set(keys);
    const missing = measured.flatMap((instant) =>
      Array.from({ length: SCHEDULES }, (_, index) => `bulk-${String(index + 1).padStart(4, '0')} ${instant}`).filter((key) => !ran.has(key)),
    );
    const recorded = outcomes.filter((outcome) => missing.includes(outcome.key));
    const missingRows = await fleet.database.sql('SELECT "runKey", status::text AS status, "ownerId", data FROM "job-scheduler" WHERE "runKey" = ANY($1)', [
      missing.map((key) => `schedule=${key}`),
    ]);
    expect({ missing, recorded, missingRows }).toEqual({ missing: [], recorded: [], missingRows: [] });
    expect(keys).toHaveLength(2 * SCHEDULES);
    // (Claimed at each instant, as schedules more frequent than claimAheadMs are, an instance whose
    // timers fire first may claim them all: the spread is asserted for claims ahead, in claim-ahead.test.ts.)
    const [{ rows }] = await fleet.database.sql<{ rows: number }>(
      `SELECT count(*)::int AS rows FROM "job-scheduler" WHERE status = 'SUCCESS' AND right("runKey", 24) = ANY($1)`,
      [measured],
    );
    expect(rows).toBe(2 * SCHEDULES);
  });
});
