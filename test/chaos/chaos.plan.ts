import type { ChaosConfig } from './chaos.config';
import { seededRandom } from './chaos.random';

export type FaultKind = 'kill' | 'pause' | 'backend-kill' | 'restart';

export interface PlannedFault {
  kind: FaultKind;
  /** Milliseconds after the first tick. */
  atMs: number;
  /** Seeds the choices made when the fault happens (which worker, which connections). */
  choiceSeed: number;
}

/** The fault schedule of a run, a pure function of its configuration (seed included). */
export interface ChaosPlan {
  faults: PlannedFault[];
  /** The worker slot whose process clock is skewed. */
  skewedSlot: number;
  /** How long the ticks last: the faults fall inside. */
  windowMs: number;
}

/**
 * Lays the faults over the ticking window: kills spread over most of it, pauses in the first
 * half (so the run they hold is taken over while ticks still come), the server restart in the
 * second half, backend kills throughout but never while the server is down.
 */
export const planChaos = (config: ChaosConfig): ChaosPlan => {
  const random = seededRandom(config.seed);
  const windowMs = config.ticks * config.tickMs;
  const within = (from: number, to: number): number => Math.round(windowMs * (from + random.next() * (to - from)));
  const spread = (count: number, from: number, to: number): number[] =>
    Array.from({ length: count }, (_, index) => {
      const width = (to - from) / count;
      return within(from + index * width, from + (index + 1) * width);
    });
  const choice = (): number => random.int(1, 2 ** 31 - 2);

  const restartAt = within(0.55, 0.7);
  const faults: PlannedFault[] = [
    { kind: 'restart', atMs: restartAt, choiceSeed: choice() },
    ...spread(config.kills, 0.1, 0.85).map((atMs) => ({ kind: 'kill' as const, atMs, choiceSeed: choice() })),
    ...spread(config.pauses, 0.1, 0.45).map((atMs) => ({ kind: 'pause' as const, atMs, choiceSeed: choice() })),
    ...spread(config.backendKillBursts, 0.05, 0.95).map((atMs) => {
      // Not while the server is down (or coming back): there would be nothing to kill.
      const clash = atMs >= restartAt - 200 && atMs <= restartAt + config.restartDownMs + 500;
      return { kind: 'backend-kill' as const, atMs: clash ? restartAt + config.restartDownMs + 700 : atMs, choiceSeed: choice() };
    }),
  ];
  faults.sort((a, b) => a.atMs - b.atMs);
  return { faults, skewedSlot: random.int(0, config.workers - 1), windowMs };
};
