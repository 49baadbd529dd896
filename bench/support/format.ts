import type { Spread } from './statistics';

/** A figure with the precision a reader can use: 3 significant digits, integers as they are. */
export const formatNumber = (value: number): string => {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  const magnitude = Math.abs(value);
  if (magnitude >= 100) return Math.round(value).toLocaleString('en-US');
  if (magnitude >= 10) return value.toFixed(1);
  if (magnitude >= 1) return value.toFixed(2);
  return value.toPrecision(2);
};

/** `median (min–max)`, or the single value when all repetitions agree. */
export const formatSpread = (value: Spread, unit = ''): string => {
  const suffix = unit && unit !== 'x' ? ` ${unit}` : unit;
  if (value.min === value.max) return `${formatNumber(value.median)}${suffix}`;
  return `${formatNumber(value.median)}${suffix} (${formatNumber(value.min)}–${formatNumber(value.max)})`;
};
