import type { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions.js';
import { type NestNode, type NestNodeOptions, startNestNode } from '../../support/nest-node';
import { StatementCounter } from '../../support/statement-counter';
import type { TestDatabase } from '../../support/test-database';
import type { LeaseContractTarget } from './lease-contract';

export interface NestContractOptions {
  database: TestDatabase;
  /** What the nodes connect to: the test database, or a pooler in front of it. */
  url: string;
  /** The lease table as the inspection connection names it. */
  table: string;
  /** How each node's application is put together (module form, DataSource, TypeORM options). */
  node?: Omit<NestNodeOptions, 'typeorm'> & { typeorm?: Partial<PostgresDataSourceOptions> };
  /** Stops what the configuration started besides the nodes (a pooler). */
  onClose?: () => Promise<void>;
}

const NODES = 4;

/** PostgreSQL options for TypeOrmModule (its options type is a union over every driver). */
const typeormOptions = (options: Partial<PostgresDataSourceOptions>): NestNodeOptions['typeorm'] => options;

/** Four Nest applications, each its own pool, plus one whose statements are counted. */
export const startNestContractTarget = async (options: NestContractOptions): Promise<LeaseContractTarget> => {
  const { database, url, table, node = {} } = options;
  const started: NestNode[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(started.map((each) => each.close()));
    await options.onClose?.();
    await database.drop();
  };
  try {
    for (let index = 0; index < NODES; index++) {
      started.push(
        await startNestNode(url, {
          ...node,
          jobScheduler: { ...node.jobScheduler, nodeId: `contract-${index}` },
          typeorm: typeormOptions({ poolSize: 2, ...node.typeorm }),
        }),
      );
    }
    const counter = new StatementCounter();
    const counted = await startNestNode(url, {
      ...node,
      jobScheduler: { ...node.jobScheduler, nodeId: 'contract-counted' },
      typeorm: typeormOptions({ poolSize: 1, ...node.typeorm, logger: counter, logging: true }),
    });
    started.push(counted);
    return {
      nodes: started.slice(0, NODES).map((each) => each.jobs),
      counted: counted.jobs,
      counter,
      table,
      sql: (text, values) => database.sql(text, values),
      close,
    };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
};
