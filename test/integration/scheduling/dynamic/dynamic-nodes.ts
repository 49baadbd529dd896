import { Module } from '@nestjs/common';
import {
  type DynamicScheduleExecution,
  DynamicSchedules,
  DynamicSchedulesModule,
  type DynamicSchedulesModuleOptions,
  type JobSchedulerModuleOptions,
  ScheduleHandler,
} from '../../../../src/features';
import { sleep } from '../../../support/lease-nodes';
import { type NestNode, startNestNode } from '../../../support/nest-node';
import { StatementCounter } from '../../../support/statement-counter';
import { createTestDatabase, type TestDatabase } from '../../../support/test-database';

/** What the handlers below ran, across every node of a test file. */
export interface HandlerCall {
  node: string;
  handler: string;
  scheduleId: string;
  scheduledAt: string;
  execution: DynamicScheduleExecution;
}
export const calls: HandlerCall[] = [];

/** Instances this node is: the handlers know their node by it. */
class NodeName {
  constructor(readonly name: string) {}
}

@ScheduleHandler('reports.tenant-report')
export class TenantReportHandler {
  constructor(private readonly node: NodeName) {}
  run(execution: DynamicScheduleExecution): void {
    calls.push({
      node: this.node.name,
      handler: 'reports.tenant-report',
      scheduleId: execution.schedule.id,
      scheduledAt: execution.scheduledAt.toISOString(),
      execution,
    });
  }
}

@ScheduleHandler('integrations.poll')
export class IntegrationPollHandler {
  constructor(private readonly node: NodeName) {}
  async run(execution: DynamicScheduleExecution): Promise<void> {
    calls.push({
      node: this.node.name,
      handler: 'integrations.poll',
      scheduleId: execution.schedule.id,
      scheduledAt: execution.scheduledAt.toISOString(),
      execution,
    });
    if ((execution.schedule.data as { fail?: boolean } | null)?.fail) throw new Error(`integration ${execution.schedule.id} is down`);
  }
}

export interface DynamicNode extends NestNode {
  name: string;
  schedules: DynamicSchedules;
  statements: StatementCounter;
}

/** One instance: its own Nest application, pool and timers, with both handlers. */
export const startDynamicNode = async (
  url: string,
  name: string,
  options: DynamicSchedulesModuleOptions = {},
  poolSize = 5,
  jobScheduler: Omit<JobSchedulerModuleOptions, 'nodeId'> = {},
): Promise<DynamicNode> => {
  @Module({ providers: [{ provide: NodeName, useValue: new NodeName(name) }, TenantReportHandler, IntegrationPollHandler] })
  class HandlersModule {}
  const statements = new StatementCounter();
  const node = await startNestNode(url, {
    jobScheduler: { ...jobScheduler, nodeId: name },
    typeorm: { logging: ['query'], logger: statements, poolSize },
    imports: [DynamicSchedulesModule.forRoot({ metrics: false, retention: false, changePollMs: 200, ...options }), HandlersModule],
  });
  return { ...node, name, schedules: node.app.get(DynamicSchedules), statements };
};

/**
 * The lifecycle the dynamic test files share, registered as jest hooks: one database per file,
 * both tables emptied and the handler calls forgotten before each test, every node started through
 * `start` closed after it (unless the test stopped it).
 */
export const useDynamicFleet = () => {
  let created: TestDatabase | undefined;
  const nodes: DynamicNode[] = [];
  const database = (): TestDatabase => {
    if (!created) throw new Error('The test database is created in beforeAll');
    return created;
  };
  beforeAll(async () => {
    created = await createTestDatabase();
  });
  beforeEach(async () => {
    calls.length = 0;
    await database().sql('DELETE FROM "job-scheduler"');
    await database().sql('DELETE FROM "job-schedule"');
  });
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((node) => node.close()));
  });
  afterAll(async () => {
    await created?.drop();
  });
  return {
    /** The nodes started and not stopped yet. */
    nodes: nodes as readonly DynamicNode[],
    get database(): TestDatabase {
      return database();
    },
    async start(name: string, options: DynamicSchedulesModuleOptions = {}): Promise<DynamicNode> {
      const node = await startDynamicNode(database().url, name, options);
      nodes.push(node);
      return node;
    },
    async stop(node: DynamicNode): Promise<void> {
      const index = nodes.indexOf(node);
      if (index >= 0) nodes.splice(index, 1);
      await node.close();
    },
  };
};

/** Waits until `check` holds, or fails after `ms` naming `what`. */
export const eventually = async (check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await sleep(50);
  }
};
