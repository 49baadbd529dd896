/**
 * The one fleet harness of the tests: chaos (npm run chaos), scheduler chaos (npm run
 * chaos:scheduler), failover (npm run failover) and the integration tests that run instances in
 * processes of their own all spawn, wait for readiness, report in JSON lines and tear down here.
 */
export {
  type ExitStatus,
  type FleetMember,
  type FleetMessage,
  FleetProcess,
  forkNode,
  realNow,
  spawnCommand,
  type StartOptions,
  TS_NODE_ARGUMENTS,
} from './fleet-process';
export { appendJsonLine, JsonLineCollector, printJsonLine, readJsonLines } from './json-lines';
export { type ChildRun, GroupedChild, ProcessGroup } from './process-group';
export { fleetProtocol, type FleetProtocol, type ParentChannel } from './protocol';
export { sleep, untilReady, waitUntil, type WaitOptions } from './readiness';
export { exitWithin, killAll, killEverythingUnder, killGroup, onProcessExit, processesUnder, signalAll } from './teardown';
