import { freshSeed } from '../chaos/chaos.random';

export type FailoverMode = 'sync' | 'async';
export type FaultKind = 'crash' | 'lagging-crash' | 'switchover';

export const FAULT_KINDS: readonly FaultKind[] = ['crash', 'lagging-crash', 'switchover'];

/** Everything one failover proof is made of. */
export interface FailoverConfig {
  modes: FailoverMode[];
  nodes: number;
  seed: number;
  /** The first port; a mode uses 30 ports from its own base (sync: base, async: base + 50). */
  portBase: number;
  /** The faults, in order; each waits for a healthy three-member cluster first. */
  faults: FaultKind[];
  tickMs: number;
  leaseMs: number;
  heartbeatMs: number;
  workMinMs: number;
  workMaxMs: number;
  /** A tick whose every attempt threw is tried again after a pause drawn from [min, max]. */
  retryMinMs: number;
  retryMaxMs: number;
  /** No new attempt of a tick later than this after its instant. */
  giveUpMs: number;
  /** Connections of each node's pool. */
  poolSize: number;
  /** Ticking before the first fault. */
  warmupMs: number;
  /** Ticking between the recovery from one fault and the next fault, and after the last. */
  settleMs: number;
  /** How long the leader's walsenders stay stopped before it is killed (lagging crash). */
  lagStallMs: number;
  /** Where the JSON results go (one file per mode). */
  resultsDir: string;
  /** Parent of the run's temporary directory (the system's temporary directory by default). */
  workDir?: string;
  /** Keep the run directory (logs, events) even when every check passes. */
  keep: boolean;
  help: boolean;
}

export const FAILOVER_DEFAULTS: Omit<FailoverConfig, 'seed' | 'resultsDir' | 'help'> = {
  modes: ['sync', 'async'],
  nodes: 4,
  portBase: 61_000,
  faults: [...FAULT_KINDS],
  tickMs: 500,
  leaseMs: 20_000,
  heartbeatMs: 2_000,
  workMinMs: 500,
  workMaxMs: 3_000,
  retryMinMs: 250,
  retryMaxMs: 500,
  giveUpMs: 45_000,
  poolSize: 4,
  warmupMs: 6_000,
  settleMs: 10_000,
  lagStallMs: 3_000,
  keep: false,
};

export const FAILOVER_USAGE = `npm run failover -- [--mode sync|async|both] [--nodes N] [--seed S] [--port-base P]
                        [--faults crash,lagging-crash,switchover] [--settle-ms MS] [--stall-ms MS]
                        [--results DIR] [--work-dir DIR] [--keep]

  --mode       sync (Patroni synchronous_mode), async, or both (default: both, sync first)
  --nodes      node processes competing for every tick (at least 2; default 4)
  --seed       work lengths and retry pauses (printed by every run)
  --port-base  first port (default 61000; ports below collide with outgoing connections);
               sync uses base..base+29, async base+50..base+79
  --faults     the faults, in order (default: one of each)
  --settle-ms  ticking between faults (default 10000)
  --stall-ms   lagging crash: how long the leader's walsenders stay stopped before the kill
               (default 3000; in sync mode commits wait that long for the standby)
  --results    where latest-<mode>.json goes (default test/failover/results)
  --work-dir   parent of the run's temporary directory
  --keep       keep the run directory (cluster logs, node events) even when every check passes`;

const positiveInteger = (name: string, value: string | undefined): number => {
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1) throw new Error(`${name} needs a positive integer, got ${value}`);
  return number;
};

const MODE_CHOICES: Record<string, FailoverMode[]> = { sync: ['sync'], async: ['async'], both: ['sync', 'async'] };

export const parseFailoverArguments = (args: readonly string[], defaultResultsDir: string): FailoverConfig => {
  const config: FailoverConfig = { ...FAILOVER_DEFAULTS, seed: freshSeed(), resultsDir: defaultResultsDir, help: false };
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    const value = (): string | undefined => args[++index];
    switch (arg) {
      case '--mode': {
        const name = value() ?? '';
        const modes = MODE_CHOICES[name];
        if (!modes) throw new Error(`--mode is sync, async or both, got ${name}`);
        config.modes = modes;
        break;
      }
      case '--nodes':
        config.nodes = positiveInteger('--nodes', value());
        if (config.nodes < 2) throw new Error('--nodes needs at least 2 processes to compete');
        break;
      case '--seed':
        config.seed = positiveInteger('--seed', value());
        break;
      case '--port-base':
        config.portBase = positiveInteger('--port-base', value());
        if (config.portBase < 1_024 || config.portBase + 80 > 65_535) throw new Error('--port-base must leave 80 ports between 1024 and 65535');
        break;
      case '--faults': {
        const kinds = (value() ?? '').split(',').filter(Boolean);
        const unknown = kinds.filter((kind) => !FAULT_KINDS.includes(kind as FaultKind));
        if (kinds.length === 0 || unknown.length > 0)
          throw new Error(`--faults takes a list of ${FAULT_KINDS.join(', ')}; got ${unknown.join(', ') || 'nothing'}`);
        config.faults = kinds as FaultKind[];
        break;
      }
      case '--settle-ms':
        config.settleMs = positiveInteger('--settle-ms', value());
        break;
      case '--stall-ms':
        config.lagStallMs = positiveInteger('--stall-ms', value());
        break;
      case '--results':
        config.resultsDir = value() ?? '';
        if (config.resultsDir === '') throw new Error('--results needs a directory');
        break;
      case '--work-dir':
        config.workDir = value();
        if (!config.workDir) throw new Error('--work-dir needs a directory');
        break;
      case '--keep':
        config.keep = true;
        break;
      case '--help':
      case '-h':
        config.help = true;
        break;
      default:
        throw new Error(`unknown argument ${arg}\n${FAILOVER_USAGE}`);
    }
  }
  return config;
};

/** The first port of a mode's cluster: the two modes never share a port. */
export const modePortBase = (config: Pick<FailoverConfig, 'portBase'>, mode: FailoverMode): number => config.portBase + (mode === 'sync' ? 0 : 50);
