/**
 * Wall clocks of IANA time zones, from the runtime's Intl data. A "wall time" is the local
 * calendar time of a zone written as if it were UTC milliseconds, so that calendar arithmetic
 * (croner's) never meets a DST transition; mapping it back to instants is where DST is decided.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

const formatterFor = (timeZone: string): Intl.DateTimeFormat => {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
};

/** Whether the runtime knows the zone (validated by constructing a formatter, as the issue asks). */
export const isKnownTimeZone = (timeZone: unknown): timeZone is string => {
  if (typeof timeZone !== 'string' || timeZone.trim() === '') return false;
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
};

/** The zone's wall time at an instant, as UTC-style milliseconds. */
export const wallTimeOf = (instant: number, timeZone: string): number => {
  const fields: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(instant)) {
    if (part.type !== 'literal') fields[part.type] = Number(part.value);
  }
  const millis = ((instant % 1000) + 1000) % 1000;
  return Date.UTC(fields.year, fields.month - 1, fields.day, fields.hour, fields.minute, fields.second) + millis;
};

/** UTC offset of the zone at an instant, in milliseconds (wall time minus instant). */
export const offsetAt = (instant: number, timeZone: string): number => wallTimeOf(instant, timeZone) - instant;

const DAY_MS = 86_400_000;

/**
 * The instants at which the zone's clocks show `wallTime`, earliest first: none when clocks
 * were set forward over it, two when they were set back over it, else one.
 */
export const instantsAt = (wallTime: number, timeZone: string): number[] => {
  const offsets = new Set([offsetAt(wallTime - DAY_MS, timeZone), offsetAt(wallTime + DAY_MS, timeZone)]);
  const instants: number[] = [];
  for (const offset of offsets) {
    const instant = wallTime - offset;
    if (wallTimeOf(instant, timeZone) === wallTime && !instants.includes(instant)) instants.push(instant);
  }
  return instants.sort((a, b) => a - b);
};
