// Names derived from a kebab-case word, the way the generated files spell them.

/** send-reminders → SendReminders */
export const classify = (kebab: string): string =>
  kebab
    .split('-')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('');

/** send-reminders → sendReminders */
export const camelize = (kebab: string): string => {
  const classified = classify(kebab);
  return classified.charAt(0).toLowerCase() + classified.slice(1);
};

/** send-reminders → SEND_REMINDERS */
export const constantCase = (kebab: string): string => kebab.replace(/-/g, '_').toUpperCase();

/** The relative import of `to` (a path without extension) from the file `from`, both from the tree's root. */
export const relativeImport = (from: string, to: string): string => {
  const fromParts = from.split('/').filter(Boolean).slice(0, -1);
  const toParts = to.split('/').filter(Boolean);
  let common = 0;
  while (common < fromParts.length && common < toParts.length - 1 && fromParts[common] === toParts[common]) common++;
  const up = fromParts.length - common;
  const rest = toParts.slice(common).join('/');
  return up === 0 ? `./${rest}` : `${'../'.repeat(up)}${rest}`;
};

/** `src/`, `/src`, `./src` → `src`; `.` or empty → `` (the tree's root). */
export const normalizeRoot = (sourceRoot: string | undefined): string =>
  (sourceRoot ?? 'src')
    .replace(/\\/g, '/')
    .replace(/^\.\/?/, '')
    .replace(/^\/+|\/+$/g, '');

/** `<root>/<path>`, or `<path>` at the tree's root. */
export const under = (root: string, path: string): string => (root ? `${root}/${path}` : path);
