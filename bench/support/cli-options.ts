export interface CliOptions {
  quick: boolean;
  /** Scenario names to run, in the registry's order; all of them when none is named. */
  scenarios: string[];
  help: boolean;
}

export const USAGE = `Usage: npm run bench -- [--quick] [scenario ...]

  --quick     3 short repetitions, smaller tables (under two minutes in all): a smoke
              test of the harness, not figures to quote
  scenario    run only these scenarios (default: all)

A full run writes bench/results/latest.json and bench/results/latest.md; a quick or partial run
writes bench/results/partial.tmp.json and prints its tables only. Uses DATABASE_URL when set,
else starts an embedded PostgreSQL with durability on.`;

/** A command line the bench does not understand: printed without a stack. */
export class UsageError extends Error {}

export const parseCliOptions = (args: readonly string[], known: readonly string[]): CliOptions => {
  const options: CliOptions = { quick: false, scenarios: [], help: false };
  for (const arg of args) {
    if (arg === '--quick') options.quick = true;
    else if (arg === '--help' || arg === '-h') options.help = true;
    else if (known.includes(arg)) options.scenarios.push(arg);
    else throw new UsageError(`Unknown argument "${arg}". Scenarios: ${known.join(', ')}.\n\n${USAGE}`);
  }
  if (options.scenarios.length === 0) options.scenarios = [...known];
  else options.scenarios = known.filter((name) => options.scenarios.includes(name));
  return options;
};
