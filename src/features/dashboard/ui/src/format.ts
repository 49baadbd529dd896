// How instants and durations read in the page.

/** An instant in the reader's locale; none is a dash. */
export const when = (iso: string | null | undefined): string => {
  if (!iso) return '—';
  return new Date(iso).toLocaleString();
};

/** A duration, in the unit that reads best. */
export const age = (ms: number): string => {
  if (ms < 1000) return ms + ' ms';
  if (ms < 120000) return Math.round(ms / 1000) + ' s';
  if (ms < 7200000) return Math.round(ms / 60000) + ' min';
  return Math.round(ms / 3600000) + ' h';
};
