import { Module } from '@nestjs/common';
import { Scheduled, ScheduledJobsService, SchedulingModule } from '../../../src/features';
import { type NestNode, startNestNode } from '../../support/nest-node';
import { sleep } from '../../support/lease-nodes';
import { StatementCounter } from '../../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';

/**
 * Claims ahead, announced (the default): one job on five instances, each an application with a
 * pool of its own. The instances claim each instant one after the other (staggered up to 500 ms);
 * those that heard the winner's announcement send nothing. Every occurrence still runs once.
 */
const NODES = 5;
const EVERY_MS = 3_000;
const INSTANTS = 4;

let database: TestDatabase;
const nodes: NestNode[] = [];
const ran: Array<{ node: string; scheduledAt: number }> = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(nodes.map((node) => node.close()));
  await database.drop();
});

const isClaim = (statement: string): boolean => statement.includes('unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $9::uuid[])');

describe('claims ahead announced', () => {
  it('one job on five instances: each occurrence once, far fewer claim statements than instances', async () => {
    const counters = Array.from({ length: NODES }, () => new StatementCounter());
    for (const [index, counter] of counters.entries()) {
      const node = `node-${index}`;
      @Scheduled('announced.every-3s', { every: `${EVERY_MS / 1000}s` })
      class AnnouncedJob {
        run({ scheduledAt }: { scheduledAt: Date }): void {
          ran.push({ node, scheduledAt: scheduledAt.getTime() });
        }
      }
      @Module({ providers: [AnnouncedJob] })
      class JobsModule {}
      nodes.push(
        await startNestNode(database.url, {
          jobScheduler: { nodeId: node },
          typeorm: { logging: ['query'], logger: counter, poolSize: 3 },
          imports: [SchedulingModule.forRoot({ metrics: false, retention: false }), JobsModule],
        }),
      );
    }
    // One instant claimed by everyone (each opens its listening connection at its first claim),
    // then INSTANTS measured from a claim window that lies wholly ahead.
    const firstMeasured = Math.ceil((Date.now() + EVERY_MS + 3_000) / EVERY_MS) * EVERY_MS;
    await sleep(firstMeasured - 2_500 - Date.now());
    for (const counter of counters) counter.reset();
    const measured = Array.from({ length: INSTANTS }, (_, index) => firstMeasured + index * EVERY_MS);
    await sleep(measured[INSTANTS - 1] + 1_500 - Date.now());
    await Promise.all(nodes.map((node) => node.app.get(ScheduledJobsService).idle()));

    for (const instant of measured) expect(ran.filter((run) => run.scheduledAt === instant)).toHaveLength(1);
    const rows = await database.sql<{ runKey: string; status: string }>(
      `SELECT "runKey", status::text AS status FROM "job-scheduler" WHERE code = 'announced.every-3s' AND "runKey" = ANY($1)`,
      [measured.map((instant) => new Date(instant).toISOString())],
    );
    expect(rows).toHaveLength(INSTANTS);
    expect(rows.every((row) => row.status === 'SUCCESS')).toBe(true);
    // The window also holds the claims of the instant after the last (2 s ahead of it). Without
    // announcements: one claim per instance per instant, 25 (checked with announceClaims: false).
    // Announced: the winner's, and those sent before its announcement arrived (5 when written).
    const claims = counters.reduce((sum, counter) => sum + counter.statements.filter(isClaim).length, 0);
    expect(claims).toBeGreaterThanOrEqual(INSTANTS);
    expect(claims).toBeLessThanOrEqual(2.5 * INSTANTS);
  }, 60_000);
});
