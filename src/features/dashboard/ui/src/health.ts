// A job's health as the page shows it: the badge, the window's figures in words (success ratio
// over the last 10 occurrences and 24 h, failures in a row, last error), and a small chart of its
// recent durations (the handler's run time where recorded, else claim to finish) with p50 / p95.

import type { HealthWindow, Job } from './api-types';
import { cell, el, svg } from './dom';
import { age, when } from './format';

const ratio = (part: { finished: number; succeeded: number }): string => (part.finished ? part.succeeded + '/' + part.finished : '—');

/**
 * "last 10: 9/10 succeeded; 24 h: 143/144; 1 failure(s) in a row". A failing job's line has no
 * 24 h figures (it is read from its 10 newest occurrences alone: 10 in a row means ten or more).
 */
export const windowText = (window: Pick<HealthWindow, 'last10' | 'consecutiveFailures'> & { last24h?: HealthWindow['last24h'] }): string => {
  const parts = ['last 10: ' + ratio(window.last10) + ' succeeded'];
  if (window.last24h) parts.push('24 h: ' + ratio(window.last24h));
  const atLeast = !window.last24h && window.consecutiveFailures >= 10 ? ' or more' : '';
  if (window.consecutiveFailures) parts.push(window.consecutiveFailures + atLeast + ' failure(s) in a row');
  return parts.join('; ');
};

/** The last error, with when it was due. */
export const lastErrorText = (window: Pick<HealthWindow, 'lastError'>): string =>
  window.lastError ? when(window.lastError.at) + ': ' + window.lastError.message : '';

/** Recent durations as bars (oldest left), scaled to the largest. */
const durationChart = (recent: readonly number[]): SVGSVGElement => {
  const width = 90;
  const height = 18;
  const max = Math.max(1, ...recent);
  const chart = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, class: 'spark', 'aria-hidden': 'true' });
  const step = width / Math.max(recent.length, 1);
  recent.forEach((ms, index) => {
    const barHeight = Math.max(1, (ms / max) * height);
    chart.appendChild(svg('rect', { x: index * step, y: height - barHeight, width: Math.max(1, step - 1), height: barHeight, class: 'spark-bar' }));
  });
  return chart;
};

/** The last outcome cell: how the newest finished occurrence ended, with the last success as its title. */
export const outcomeCell = (item: { lastOutcome: string | null; lastSuccessAt: string | null }): HTMLTableCellElement =>
  cell(
    item.lastOutcome
      ? el('span', { class: 'outcome outcome-' + item.lastOutcome, title: 'last success ' + when(item.lastSuccessAt), text: item.lastOutcome })
      : null,
  );

/** The health cell of a job or a dynamic schedule: badge, window in words, last error, durations. */
export const healthCell = (subject: Pick<Job, 'health' | 'window'> & { paused?: Job['paused'] }): HTMLTableCellElement => {
  const window = subject.window;
  const children: Array<Node | string> = [el('span', { class: 'badge health-' + subject.health, text: subject.health })];
  if (subject.paused) children.push(el('small', { class: 'muted', text: ' paused by ' + subject.paused.by }));
  children.push(el('div', { class: 'muted window', text: windowText(window) }));
  if (window.lastError) children.push(el('div', { class: 'error-line', title: window.lastError.message, text: 'last error ' + lastErrorText(window) }));
  if (window.durationMs) {
    children.push(
      el('div', { class: 'durations' }, [
        durationChart(window.durationMs.recent),
        el('small', {
          class: 'muted',
          title: "the handler's run time where recorded, else claim to finish, over the last 24 h",
          text: 'p50 ' + age(window.durationMs.p50) + ', p95 ' + age(window.durationMs.p95),
        }),
      ]),
    );
  }
  return el('td', { class: 'health' }, children);
};
