/**
 * The cron grammar accepted here: five POSIX fields at minute resolution, with `*`, lists,
 * ranges, steps and English month / weekday names. Refused: seconds, `@daily`-style shorthands,
 * `?`, `L`, `W`, `#`. Returns the reason a field is invalid, or null.
 */

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** The value `names[0]` stands for. */
  namesFrom?: number;
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
    namesFrom: 1,
  },
  { name: 'day of week', min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'], namesFrom: 0 },
];

const valueOf = (text: string, field: FieldSpec): number | null => {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    return value >= field.min && value <= field.max ? value : null;
  }
  const index = field.names?.indexOf(text.toUpperCase()) ?? -1;
  return index >= 0 ? index + (field.namesFrom ?? 0) : null;
};

const checkItem = (item: string, field: FieldSpec): string | null => {
  const [range, step, extra] = item.split('/');
  if (extra !== undefined) return `"${item}" has two steps`;
  if (step !== undefined && !(/^\d+$/.test(step) && Number(step) >= 1 && Number(step) <= field.max)) {
    return `"${item}" has an invalid step`;
  }
  if (range === '*') return null;
  const bounds = range.split('-');
  if (bounds.length > 2) return `"${item}" is not a range`;
  const values = bounds.map((bound) => valueOf(bound, field));
  if (values.some((value) => value === null)) return `"${item}" is not a ${field.name} (${field.min}-${field.max})`;
  if (values.length === 2 && (values[0] as number) > (values[1] as number)) return `"${item}" is a descending range`;
  return null;
};

/** Validates a five-field expression; returns why it is refused, or null when it is valid. */
export const cronExpressionError = (expression: unknown): string | null => {
  if (typeof expression !== 'string') return 'a cron expression must be a string';
  const fields = expression.trim().split(/\s+/);
  if (expression.trim().startsWith('@')) return 'shorthands such as @daily are not supported; write the five fields';
  if (fields.length === 6) {
    return `a cron expression has exactly five fields (minute hour day month weekday), got 6: drop the seconds field (the first one), "${fields.slice(1).join(' ')}" (runs are at minute resolution)`;
  }
  if (fields.length !== 5) return `a cron expression has exactly five fields (minute hour day month weekday), got ${fields.length}`;
  for (const [index, text] of fields.entries()) {
    const field = FIELDS[index];
    for (const item of text.split(',')) {
      const error = item === '' ? `an empty item in the ${field.name} field` : checkItem(item, field);
      if (error) return `${field.name} field: ${error}`;
    }
  }
  return null;
};

/** Whether the hour field is a plain `*`: such a job keeps its rhythm through DST changes. */
export const runsEveryHour = (expression: string): boolean => expression.trim().split(/\s+/)[1] === '*';
