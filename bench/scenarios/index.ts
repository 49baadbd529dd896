import { acquireSerializable } from './acquire-serializable';
import { contended } from './contended';
import { dashboard } from './dashboard';
import { dynamicSchedules } from './dynamic-schedules';
import { fleetJobs } from './fleet-jobs';
import { heartbeat } from './heartbeat';
import { peer } from './peer';
import { peers } from './peers';
import { pooler } from './pooler';
import { retentionChurn } from './retention-churn';
import { roundTrips } from './round-trips';
import { tableGrowth } from './table-growth';
import { tenants } from './tenants';
import { uncontended } from './uncontended';
import type { Scenario } from './scenario';

/** Every scenario, in the order a full run measures them. */
export const SCENARIOS: readonly Scenario[] = [
  roundTrips,
  uncontended,
  contended,
  tableGrowth,
  retentionChurn,
  heartbeat,
  peer,
  pooler,
  tenants,
  fleetJobs,
  dynamicSchedules,
  dashboard,
  acquireSerializable,
  peers,
];
