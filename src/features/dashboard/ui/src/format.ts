// How instants and durations read in the page. Every instant is shown in one zone, UTC or the
// browser's (the reader's choice, remembered in localStorage), with its offset written after it.

const ZONE_KEY = 'sdcorejs-dashboard-zone';

export type Zone = 'utc' | 'local';

const stored = (): Zone => {
  try {
    return window.localStorage.getItem(ZONE_KEY) === 'local' ? 'local' : 'utc';
  } catch {
    return 'utc';
  }
};

let zone: Zone = stored();

export const currentZone = (): Zone => zone;

/** Switches the zone (and remembers it). */
export const setZone = (next: Zone): void => {
  zone = next;
  try {
    window.localStorage.setItem(ZONE_KEY, next);
  } catch {
    // Storage refused (private mode): the choice lasts for this page.
  }
};

/** The zone's name as the page labels it: UTC, or the browser's IANA zone. */
export const zoneName = (): string => (zone === 'utc' ? 'UTC' : (Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'local time'));

/** The zone's offset from UTC at an instant, in ms (0 in UTC). */
export const offsetAt = (ms: number): number => (zone === 'utc' ? 0 : -new Date(ms).getTimezoneOffset() * 60000);

const two = (n: number): string => String(n).padStart(2, '0');

/** The wall clock of an instant in the zone: fields of a Date read in UTC. */
const wall = (ms: number): Date => new Date(ms + offsetAt(ms));

const offsetText = (ms: number): string => {
  if (zone === 'utc') return 'UTC';
  const minutes = Math.round(offsetAt(ms) / 60000);
  const sign = minutes < 0 ? '-' : '+';
  return 'UTC' + sign + two(Math.floor(Math.abs(minutes) / 60)) + ':' + two(Math.abs(minutes) % 60);
};

/** yyyy-mm-dd in the zone. */
export const dayOf = (ms: number): string => {
  const d = wall(ms);
  return d.getUTCFullYear() + '-' + two(d.getUTCMonth() + 1) + '-' + two(d.getUTCDate());
};

/** hh:mm (with seconds when asked) in the zone. */
export const clockOf = (ms: number, seconds = false): string => {
  const d = wall(ms);
  return two(d.getUTCHours()) + ':' + two(d.getUTCMinutes()) + (seconds ? ':' + two(d.getUTCSeconds()) : '');
};

/** An instant in the zone, labelled: "2026-12-02 14:05:09 UTC"; none is a dash. */
export const when = (iso: string | null | undefined): string => {
  if (!iso) return '—';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return dayOf(ms) + ' ' + clockOf(ms, true) + ' ' + offsetText(ms);
};

/** A run key with the instant it starts with (an occurrence's due instant, a runNow's asked instant) in the zone. */
export const runKeyText = (runKey: string | null): string | null => {
  if (runKey === null) return null;
  const match = /^(schedule=\S+ |run-now )?(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)(.*)$/s.exec(runKey);
  if (!match) return runKey;
  return (match[1] ?? '') + when(match[2]) + match[3];
};

/** A duration, in the unit that reads best. */
export const age = (ms: number): string => {
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 120000) return Math.round(ms / 1000) + ' s';
  if (ms < 7200000) return Math.round(ms / 60000) + ' min';
  return Math.round(ms / 3600000) + ' h';
};

/** Round tick steps for an axis. */
const TICK_STEPS = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400].map((s) => s * 1000);

/** Ticks on round times of the zone (whole minutes, hours, midnights) in [from, to], at most about 8. */
export const roundTicks = (from: number, to: number): Array<{ at: number; label: string }> => {
  const step = TICK_STEPS.find((candidate) => (to - from) / candidate <= 8) ?? 86400000;
  const ticks: Array<{ at: number; label: string }> = [];
  let local = Math.ceil((from + offsetAt(from)) / step) * step;
  for (let guard = 0; guard < 20; guard++, local += step) {
    const at = local - offsetAt(local - offsetAt(from));
    if (at > to) break;
    const midnight = clockOf(at) === '00:00';
    ticks.push({ at, label: step >= 86400000 || midnight ? dayOf(at).slice(5) + (step >= 86400000 ? '' : ' 00:00') : clockOf(at) });
  }
  return ticks;
};
