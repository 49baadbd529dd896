import { freshSeed } from '../chaos.random';

/** Everything a scheduler chaos run is made of: a preset plus command-line overrides. */
export interface SchedulerChaosConfig {
  preset: SchedulerChaosPresetName;
  seed: number;
  /** Instance processes at any time (a killed or restarted one is replaced by a new process). */
  instances: number;
  /** The counted window: occurrences due in it are judged; faults fall inside it. */
  windowMs: number;
  /** From the moment every instance is ready to the start of the counted window. */
  startMarginMs: number;
  /** No fault in the last part of the window (the occurrences due then are judged as well). */
  quietEndMs: number;
  /** After the window: at most this long for take-overs to finish what the faults left. */
  settleMaxMs: number;
  /** SIGKILL of an instance in the middle of a run / 100-500 ms before a due instant. */
  killsMidRun: number;
  killsBeforeInstant: number;
  /** SIGTERM (app.close(), then a new process) at a random moment / 100-500 ms before a due instant. */
  termsRandom: number;
  termsBeforeInstant: number;
  /** Rounds of rolling restart: every instance in turn, each SIGTERM 100-500 ms before an instant. */
  rollingRestarts: number;
  /** SIGSTOP of an instance mid-run for a little longer than the lease, then SIGCONT. */
  shortStalls: number;
  /** SIGSTOP until another instance has taken over every lease it held (bounded), then SIGCONT. */
  longStalls: number;
  backendKillBursts: number;
  backendKillsPerBurst: number;
  /** Cuts of the proxy in front of the proxied instances' pools. */
  outages: number;
  outageMinMs: number;
  outageMaxMs: number;
  /** Instances whose pool goes through the orchestrator's TCP proxy. */
  proxiedInstances: number;
  /** Wall-clock steps (libfaketime) of one instance: forward by clockStepMs, later back. */
  clockSteps: number;
  clockStepMs: number;
  /**
   * At most this many instances stopped, dead, closing, booting or cut from the database at once:
   * the others (at least two) must be able to run everything, overruns included, or a loss would
   * be the harness's doing.
   */
  maxDown: number;
}

export type SchedulerChaosPresetName = 'ci' | 'full';

type Preset = Omit<SchedulerChaosConfig, 'seed' | 'preset'>;

/** The full soak's faults per minute of window (rounded up). */
const perMinute = (minutes: number, rate: number): number => Math.ceil(minutes * rate);

export const fullPreset = (minutes: number): Preset => ({
  instances: 6,
  windowMs: minutes * 60_000,
  startMarginMs: 5_000,
  quietEndMs: 10_000,
  settleMaxMs: 75_000,
  killsMidRun: perMinute(minutes, 0.5),
  killsBeforeInstant: perMinute(minutes, 0.5),
  termsRandom: perMinute(minutes, 0.4),
  termsBeforeInstant: perMinute(minutes, 0.6),
  rollingRestarts: perMinute(minutes, 0.2),
  shortStalls: perMinute(minutes, 0.4),
  longStalls: perMinute(minutes, 0.2),
  backendKillBursts: perMinute(minutes, 3),
  backendKillsPerBurst: 3,
  outages: perMinute(minutes, 0.5),
  outageMinMs: 3_000,
  outageMaxMs: 14_000,
  proxiedInstances: 2,
  clockSteps: perMinute(minutes, 0.2),
  clockStepMs: 25_000,
  maxDown: 3,
});

export const SCHEDULER_CHAOS_PRESETS: Record<SchedulerChaosPresetName, Preset> = {
  /** The jest variant: 4 instances, 70 s of faults, every kind at least once. */
  ci: {
    instances: 4,
    windowMs: 70_000,
    startMarginMs: 3_000,
    quietEndMs: 10_000,
    settleMaxMs: 55_000,
    killsMidRun: 1,
    killsBeforeInstant: 1,
    termsRandom: 1,
    termsBeforeInstant: 1,
    rollingRestarts: 0,
    shortStalls: 1,
    longStalls: 1,
    backendKillBursts: 4,
    backendKillsPerBurst: 2,
    outages: 1,
    outageMinMs: 3_000,
    outageMaxMs: 5_000,
    proxiedInstances: 1,
    clockSteps: 1,
    clockStepMs: 25_000,
    maxDown: 2,
  },
  /** `npm run chaos:scheduler`: 6 instances, 15 minutes (`--minutes N` to change). */
  full: fullPreset(15),
};

export interface SchedulerChaosCliOptions {
  config: SchedulerChaosConfig;
  reportPath?: string;
  /** Keep the run directory (journals, outputs, rows) and the database even when every check passes. */
  keep: boolean;
  /** Judge again the evidence a kept run directory holds, instead of running. */
  judgeDirectory?: string;
  help: boolean;
}

export const SCHEDULER_CHAOS_USAGE = `npm run chaos:scheduler -- [--preset full|ci] [--minutes N] [--seed N] [--instances N] [--no-clock-step] [--report file.json] [--keep] [--judge DIR]

  --preset         full (default: 6 instances, 15 minutes) or ci (4 instances, 70 s: the jest variant)
  --minutes        the counted window in minutes (full preset; faults scale with it)
  --seed           replays the fault plan of an earlier run (printed by every run)
  --instances      instance processes (at least 4)
  --no-clock-step  skips the wall-clock step (for a machine without Debian's faketime)
  --report         also writes the report as JSON
  --keep           keeps the run directory and the database
  --judge DIR      judges again the evidence of a kept run directory (evidence.json, report.json)`;

const positive = (name: string, value: string | undefined): number => {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new Error(`${name} needs a positive number, got ${value}`);
  return number;
};

export const parseSchedulerChaosArguments = (args: readonly string[]): SchedulerChaosCliOptions => {
  let preset: SchedulerChaosPresetName = 'full';
  let minutes: number | undefined;
  let seed: number | undefined;
  let instances: number | undefined;
  let clockStep = true;
  let reportPath: string | undefined;
  let keep = false;
  let judgeDirectory: string | undefined;
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
      case '--minutes':
        minutes = positive('--minutes', value());
        break;
      case '--seed':
        seed = Math.round(positive('--seed', value()));
        break;
      case '--instances':
        instances = Math.round(positive('--instances', value()));
        if (instances < 4) throw new Error('--instances needs at least 4 processes');
        break;
      case '--no-clock-step':
        clockStep = false;
        break;
      case '--report':
        reportPath = value();
        break;
      case '--judge':
        judgeDirectory = value();
        break;
      case '--keep':
        keep = true;
        break;
      case '--help':
      case '-h':
        help = true;
        break;
      default:
        throw new Error(`unknown argument ${arg}\n${SCHEDULER_CHAOS_USAGE}`);
    }
  }
  if (minutes !== undefined && preset !== 'full') throw new Error('--minutes applies to the full preset');
  const base = minutes === undefined ? SCHEDULER_CHAOS_PRESETS[preset] : fullPreset(minutes);
  return {
    config: {
      ...base,
      preset,
      seed: seed ?? freshSeed(),
      instances: instances ?? base.instances,
      clockSteps: clockStep ? base.clockSteps : 0,
    },
    reportPath,
    keep,
    ...(judgeDirectory === undefined ? {} : { judgeDirectory }),
    help,
  };
};
