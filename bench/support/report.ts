import type { MachineDescription } from './machine';
import type { ServerDescription } from './bench-server';
import { pairedRatios, type Spread, spread } from './statistics';

/** One figure of one variant in one case, over the repetitions. */
export interface Figure {
  /** The size or setting measured, e.g. "8 callers" or "32 nodes". */
  case: string;
  variant: string;
  metric: string;
  unit: string;
  spread: Spread;
}

/** A goal of the issue, checked against the figures. `met` is null when not applicable. */
export interface GoalCheck {
  goal: string;
  target: string;
  measured: string;
  met: boolean | null;
}

export interface ScenarioReport {
  name: string;
  title: string;
  /** What was measured: sizes, durations, repetitions, pool sizes. */
  sizes: string;
  variants: Record<string, string>;
  figures: Figure[];
  goals: GoalCheck[];
  notes: string[];
  seconds: number;
}

export interface BenchReport {
  command: string;
  quick: boolean;
  startedAt: string;
  seconds: number;
  machine: MachineDescription;
  server: ServerDescription;
  packages: Record<string, string>;
  scenarios: ScenarioReport[];
  /** Scenarios that threw, with the error: the others still report. */
  failures: Array<{ scenario: string; error: string }>;
}

/** Collects the figures of one scenario as it measures them. */
export class FigureSheet {
  readonly figures: Figure[] = [];
  readonly goals: GoalCheck[] = [];
  readonly notes: string[] = [];

  add(caseName: string, variant: string, metric: string, unit: string, samples: readonly number[]): Spread {
    const figure: Figure = { case: caseName, variant, metric, unit, spread: spread(samples) };
    this.figures.push(figure);
    return figure.spread;
  }

  addRatio(caseName: string, label: string, metric: string, ratios: Spread): Spread {
    this.figures.push({ case: caseName, variant: label, metric, unit: 'x', spread: ratios });
    return ratios;
  }

  /** numerator ÷ denominator of `value`, repetition by repetition (they were measured side by side). */
  addPairedRatio<V extends { name: string }, R>(
    caseName: string,
    results: ReadonlyMap<V, readonly R[]>,
    numerator: V,
    denominator: V,
    metric: string,
    value: (result: R) => number,
  ): Spread {
    const values = (variant: V) => (results.get(variant) ?? []).map(value);
    return this.addRatio(caseName, `${numerator.name} ÷ ${denominator.name}`, metric, pairedRatios(values(numerator), values(denominator)));
  }

  goal(goal: string, target: string, measured: string, met: boolean | null): void {
    this.goals.push({ goal, target, measured, met });
  }

  note(text: string): void {
    this.notes.push(text);
  }
}
