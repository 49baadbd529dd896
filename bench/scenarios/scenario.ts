import type { CleanupStack } from '../support/cleanup';
import type { FigureSheet } from '../support/report';

export interface ScenarioContext {
  quick: boolean;
  /** Repetitions of every measurement (each interleaved with the other variants). */
  repetitions: number;
  /** Closes what the scenario starts (database, pools, Nest applications) when it ends. */
  cleanup: CleanupStack;
  sheet: FigureSheet;
  log(message: string): void;
}

/** What a scenario says about itself once it has run. */
export interface ScenarioOutline {
  sizes: string;
  variants: Record<string, string>;
}

export interface Scenario {
  /** As given on the command line: `npm run bench -- <name>`. */
  name: string;
  title: string;
  run(context: ScenarioContext): Promise<ScenarioOutline>;
}
