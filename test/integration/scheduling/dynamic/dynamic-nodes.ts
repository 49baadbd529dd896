import { type DynamicModule, Module } from '@nestjs/common';
import {
  type DynamicScheduleExecution,
  DynamicSchedules,
  DynamicSchedulesModule,
  type DynamicSchedulesModuleOptions,
  ScheduleHandler,
} from '../../../../src/features';
import { type NestNode, startNestNode } from '../../../support/nest-node';
import { StatementCounter } from '../../../support/statement-counter';

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
    calls.push({ node: this.node.name, handler: 'reports.tenant-report', scheduleId: execution.schedule.id, scheduledAt: execution.scheduledAt.toISOString(), execution });
  }
}

@ScheduleHandler('integrations.poll')
export class IntegrationPollHandler {
  constructor(private readonly node: NodeName) {}
  async run(execution: DynamicScheduleExecution): Promise<void> {
    calls.push({ node: this.node.name, handler: 'integrations.poll', scheduleId: execution.schedule.id, scheduledAt: execution.scheduledAt.toISOString(), execution });
    if ((execution.schedule.data as { fail?: boolean } | null)?.fail) throw new Error(`integration ${execution.schedule.id} is down`);
  }
}

export interface DynamicNode extends NestNode {
  name: string;
  schedules: DynamicSchedules;
  statements: StatementCounter;
}

/** One instance: its own Nest application, pool and timers, with both handlers. */
export const startDynamicNode = async (url: string, name: string, options: DynamicSchedulesModuleOptions = {}, poolSize = 5): Promise<DynamicNode> => {
  @Module({ providers: [{ provide: NodeName, useValue: new NodeName(name) }, TenantReportHandler, IntegrationPollHandler] })
  class HandlersModule {}
  const statements = new StatementCounter();
  const node = await startNestNode(url, {
    jobScheduler: { nodeId: name },
    typeorm: { logging: ['query'], logger: statements, poolSize },
    imports: [DynamicSchedulesModule.forRoot({ metrics: false, retention: false, changePollMs: 200, ...options }) as DynamicModule, HandlersModule],
  });
  return { ...node, name, schedules: node.app.get(DynamicSchedules), statements };
};
