import { Module, type Type } from '@nestjs/common';
import { Scheduled, ScheduledJobsService, SchedulingModule } from '../../../src/features';
import { claimBatchSize } from '../../../src/features/scheduling/fleet/claim-batcher';
import { type NestNode, startNestNode } from '../../support/nest-node';
import { sleep } from '../../support/lease-nodes';
import { StatementCounter } from '../../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

const JOBS = 250;
const EVERY_MS = 3_000;

let database: TestDatabase;
const nodes: NestNode[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(nodes.map((node) => node.close()));
  await database.drop();
});

/** JOBS jobs due at the same instants, declared as an application declares them. */
const declaredJobs = (): Type[] =>
  Array.from({ length: JOBS }, (_, index) => {
    @Scheduled(`together.job-${String(index).padStart(3, '0')}`, { every: `${EVERY_MS / 1000}s` })
    class TogetherJob {
      run(): void {}
    }
    return TogetherJob;
  });

const isBatchClaim = (statement: string): boolean => statement.includes('unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $9::uuid[])');
const isSingleAcquire = (statement: string): boolean => statement.includes('INSERT INTO') && !isBatchClaim(statement);

describe('jobs due at the same instant', () => {
  it('are claimed by a few statements per instance, every occurrence once across three instances', async () => {
    const counters = ['a', 'b', 'c'].map(() => new StatementCounter());
    for (const [index, counter] of counters.entries()) {
      @Module({ providers: declaredJobs() })
      class JobsModule {}
      nodes.push(
        await startNestNode(database.url, {
          jobScheduler: { nodeId: `node-${index}` },
          typeorm: { logging: ['query'], logger: counter, poolSize: 10 },
          // Claimed at the instant (claims ahead, the default, have tests of their own: claim-ahead.test.ts).
          imports: [SchedulingModule.forRoot({ metrics: false, retention: false, claimAheadMs: 0 }), JobsModule],
        }),
      );
    }
    // Two due instants pass on every instance (each instance's timers are its own).
    const firstDue = Math.ceil((Date.now() + 1_000) / EVERY_MS) * EVERY_MS;
    await sleep(firstDue - 300 - Date.now());
    for (const counter of counters) counter.reset();
    await sleep(firstDue + EVERY_MS + 1_500 - Date.now());
    await Promise.all(nodes.map((node) => node.app.get(ScheduledJobsService).idle()));
    const measured = [new Date(firstDue).toISOString(), new Date(firstDue + EVERY_MS).toISOString()];

    const rows = await database.sql<{ runKey: string; status: string; runs: number }>(
      `SELECT "runKey", status, count(*)::int AS runs FROM "job-scheduler" WHERE "runKey" = ANY($1) GROUP BY 1, 2`,
      [measured],
    );
    expect(rows).toEqual(expect.arrayContaining(measured.map((runKey) => ({ runKey, status: 'SUCCESS', runs: JOBS }))));
    expect(rows).toHaveLength(2);
    const ran = nodes.flatMap((node) => node.app.get(ScheduledJobsService).runs).filter((run) => measured.includes(run.scheduledAt.toISOString()));
    expect(ran.filter((run) => run.outcome === 'succeeded')).toHaveLength(2 * JOBS);

    // Each instance claimed the 2 × 250 occurrences in a few statements: ceil(250 / claimBatchSize)
    // per turn of the event loop, and timers armed at different moments for one instant may
    // expire a millisecond apart (another turn). One by one it would be 500 statements.
    const perTurn = Math.ceil(JOBS / claimBatchSize(JOBS));
    for (const counter of counters) {
      const claims = counter.statements.filter(isBatchClaim).length;
      const singles = counter.statements.filter(isSingleAcquire).length;
      expect(claims).toBeGreaterThanOrEqual(2 * perTurn);
      expect(claims + singles).toBeLessThanOrEqual(50);
    }
    // The runs that end in one turn are completed by one statement: far fewer than one per run.
    const completes = counters.map((counter) => counter.statements.filter((text) => text.includes(`SET "status" = 'SUCCESS'`)).length);
    expect(completes.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0);
    expect(completes.reduce((sum, count) => sum + count, 0)).toBeLessThanOrEqual(60);
  });
});
