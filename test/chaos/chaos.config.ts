import { freshSeed } from './chaos.random';

/** Everything a chaos run is made of; a preset plus command-line overrides. */
export interface ChaosConfig {
  preset: ChaosPresetName;
  seed: number;
  /** Worker processes competing at any time (a killed one is replaced by a new process). */
  workers: number;
  /** Job codes; every tick is one logical run per code. */
  codes: string[];
  ticks: number;
  /** How often the orchestrator announces the next tick to every worker. */
  tickMs: number;
  leaseMs: number;
  heartbeatMs: number;
  /** Work of a run: a length drawn from [min, max] by (seed, code, tick, attempt). */
  workMinMs: number;
  workMaxMs: number;
  /** Share of first attempts whose callback throws on purpose (FAIL, then reclaimed). */
  plannedFailureRate: number;
  /** How often each worker looks for runs to take over (FAIL, expired RUNNING, missed ticks). */
  sweepMs: number;
  /** SIGKILLs of a worker in the middle of a run. */
  kills: number;
  /** SIGSTOPs of a worker for longer than its lease, then SIGCONT. */
  pauses: number;
  /** Bursts of pg_terminate_backend on random library connections. */
  backendKillBursts: number;
  backendKillsPerBurst: number;
  /** One restart of the run's own PostgreSQL server; how long it stays down. */
  restartDownMs: number;
  /** The process clock of one worker is off by this much. */
  clockSkewMs: number;
  /** How long the run may take to finish every tick once the faults stop. */
  finishTimeoutMs: number;
}

export type ChaosPresetName = 'full' | 'ci';

type Preset = Omit<ChaosConfig, 'seed' | 'preset'>;

const CODES = ['sync-orders', 'send-invoices', 'rebuild-search', 'expire-carts', 'export-ledger', 'refresh-rates'];

export const CHAOS_PRESETS: Record<ChaosPresetName, Preset> = {
  /** `npm run chaos`: 8 processes, 500 logical runs. */
  full: {
    workers: 8,
    codes: CODES.slice(0, 5),
    ticks: 100,
    tickMs: 150,
    leaseMs: 2_000,
    heartbeatMs: 400,
    workMinMs: 30,
    workMaxMs: 600,
    plannedFailureRate: 0.03,
    sweepMs: 300,
    kills: 3,
    pauses: 2,
    backendKillBursts: 12,
    backendKillsPerBurst: 3,
    restartDownMs: 1_500,
    clockSkewMs: -5 * 3_600_000,
    finishTimeoutMs: 60_000,
  },
  /** The jest variant: the same faults, fewer processes and ticks. */
  ci: {
    workers: 4,
    codes: CODES.slice(0, 3),
    ticks: 40,
    tickMs: 120,
    leaseMs: 1_200,
    heartbeatMs: 250,
    workMinMs: 20,
    workMaxMs: 400,
    plannedFailureRate: 0.03,
    sweepMs: 200,
    kills: 1,
    pauses: 1,
    backendKillBursts: 4,
    backendKillsPerBurst: 2,
    restartDownMs: 800,
    clockSkewMs: 3 * 3_600_000,
    finishTimeoutMs: 30_000,
  },
};

export interface ChaosCliOptions {
  config: ChaosConfig;
  /** Where to write the JSON report, if anywhere. */
  reportPath?: string;
  /** Keep the run directory (event logs, worker output) even when every check passes. */
  keep: boolean;
  help: boolean;
}

export const CHAOS_USAGE = `npm run chaos -- [--preset full|ci] [--seed N] [--workers N] [--ticks N] [--report file.json] [--keep]

  --preset   full (default: 8 workers, 5 codes x 100 ticks) or ci (4 workers, 3 codes x 40 ticks)
  --seed     replays the fault schedule of an earlier run (printed by every run)
  --workers  worker processes (at least 2)
  --ticks    ticks; logical runs = codes x ticks
  --report   also writes the figures as JSON
  --keep     keeps the run directory with every worker's events and output`;

const positiveInteger = (name: string, value: string | undefined): number => {
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1) throw new Error(`${name} needs a positive integer, got ${value}`);
  return number;
};

export const parseChaosArguments = (args: readonly string[]): ChaosCliOptions => {
  let preset: ChaosPresetName = 'full';
  let seed: number | undefined;
  let workers: number | undefined;
  let ticks: number | undefined;
  let reportPath: string | undefined;
  let keep = false;
  let help = false;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    const value = (): string | undefined => args[++index];
    switch (arg) {
      case '--preset': {
        const name = value();
        if (name !== 'full' && name !== 'ci') throw new Error(`--preset is full or ci, got ${name}`);
        preset = name;
        break;
      }
      case '--seed':
        seed = positiveInteger('--seed', value());
        break;
      case '--workers':
        workers = positiveInteger('--workers', value());
        if (workers < 2) throw new Error('--workers needs at least 2 processes to compete');
        break;
      case '--ticks':
        ticks = positiveInteger('--ticks', value());
        break;
      case '--report':
        reportPath = value();
        break;
      case '--keep':
        keep = true;
        break;
      case '--help':
      case '-h':
        help = true;
        break;
      default:
        throw new Error(`unknown argument ${arg}\n${CHAOS_USAGE}`);
    }
  }
  const base = CHAOS_PRESETS[preset];
  return {
    config: {
      ...base,
      preset,
      seed: seed ?? freshSeed(),
      workers: workers ?? base.workers,
      ticks: ticks ?? base.ticks,
    },
    reportPath,
    keep,
    help,
  };
};
