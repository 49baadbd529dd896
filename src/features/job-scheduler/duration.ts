const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * An interval as milliseconds: a positive finite number, or text such as `500ms`, `30s`, `15m`,
 * `1h`, `1d` (several parts may follow each other: `1h30m`). Returns null when invalid.
 */
export const parseInterval = (value: unknown): number | null => {
  if (typeof value === 'number') return Number.isFinite(value) && value > 0 && Number.isInteger(value) ? value : null;
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (!/^(\d+(ms|s|m|h|d))+$/.test(text)) return null;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+)(ms|s|m|h|d)/g)) total += Number(amount) * UNITS[unit];
  return total > 0 && Number.isSafeInteger(total) ? total : null;
};
