// The timeline: one job's or dynamic schedule's occurrences over the last 24 h or 7 days, drawn
// as SVG by hand: a mark per occurrence in its outcome's colour (run now in a lower lane), the
// gaps where it did not run, and ticks. A mark opens its run.

import { api, newest } from './api';
import type { Timeline } from './api-types';
import { byId, el, replaceContent, svg } from './dom';
import { when } from './format';
import { showRun } from './run-detail-view';
import { messageOf, say } from './status';

const WIDTH = 1000;
const HEIGHT = 64;
/** Marks are focusable (Tab, Enter) while there are at most this many. */
const MAX_FOCUSABLE_MARKS = 300;

/** The timeline shown: "job:<name>" or "schedule:<id>" ('' before the first is known), and its span. */
const state = { key: '', span: '24h' };

const nameOf = (key: string): string => key.slice(key.indexOf(':') + 1);

export const timelineKey = (): string => state.key;

export const loadTimeline = (): Promise<void> => {
  if (!state.key) return Promise.resolve();
  const kind = state.key.slice(0, state.key.indexOf(':'));
  const path = (kind === 'schedule' ? 'schedules/' : 'jobs/') + encodeURIComponent(nameOf(state.key)) + '/timeline?span=' + state.span;
  return api<Timeline>(path).then(newest('timeline', renderTimeline), (error: unknown) => {
    say('Timeline: ' + messageOf(error), true);
  });
};

/** Shows this timeline (its select follows). */
export const chooseTimeline = (key: string): void => {
  state.key = key;
  byId('timeline-job', HTMLSelectElement).value = key;
  void loadTimeline();
};

/** Shows this timeline and scrolls to it (a row's Timeline button). */
export const showTimeline = (key: string): void => {
  chooseTimeline(key);
  byId('timeline-title', HTMLElement).scrollIntoView();
};

const renderTimeline = (timeline: Timeline): void => {
  const from = Date.parse(timeline.from);
  const to = Date.parse(timeline.to);
  const x = (iso: string): number => ((Date.parse(iso) - from) / (to - from)) * WIDTH;
  const chart = svg('svg', {
    viewBox: '0 0 ' + WIDTH + ' ' + HEIGHT,
    class: 'chart',
    role: 'img',
    'aria-label': timeline.marks.length + ' occurrences of ' + nameOf(state.key),
  });
  chart.appendChild(svg('rect', { x: 0, y: 0, width: WIDTH, height: HEIGHT - 16, class: 'track' }));
  for (const gap of timeline.gaps) {
    const rect = svg('rect', { x: x(gap.from), y: 0, width: Math.max(1, x(gap.to) - x(gap.from)), height: 30, class: 'gap' });
    rect.appendChild(svg('title', {})).textContent = 'did not run: ' + gap.occurrences + ' occurrence(s) from ' + when(gap.from);
    chart.appendChild(rect);
  }
  const focusable = timeline.marks.length <= MAX_FOCUSABLE_MARKS;
  for (const mark of timeline.marks) {
    const lower = mark.trigger === 'run-now';
    const rect = svg('rect', {
      x: Math.max(0, x(mark.at) - 1),
      y: lower ? 32 : 2,
      width: 3,
      height: lower ? 14 : 26,
      class: 'mark ' + mark.outcome + (lower ? ' run-now' : ''),
      'data-outcome': mark.outcome,
      'data-at': mark.at,
    });
    rect.appendChild(svg('title', {})).textContent =
      when(mark.at) + ': ' + mark.outcome + (lower ? ' (run now)' : '') + (mark.runs > 1 ? ', ' + mark.runs + ' runs' : '');
    if (focusable) {
      rect.setAttribute('tabindex', '0');
      rect.setAttribute('role', 'button');
      rect.setAttribute('aria-label', rect.textContent ?? '');
      rect.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') showRun(mark.runId);
      });
    }
    rect.addEventListener('click', () => showRun(mark.runId));
    chart.appendChild(rect);
  }
  const ticks = state.span === '7d' ? 7 : 6;
  for (let index = 0; index <= ticks; index++) {
    const at = from + ((to - from) * index) / ticks;
    const label = svg('text', {
      x: (WIDTH * index) / ticks,
      y: HEIGHT - 2,
      class: 'tick',
      'text-anchor': index === 0 ? 'start' : index === ticks ? 'end' : 'middle',
    });
    label.textContent = state.span === '7d' ? new Date(at).toLocaleDateString() : new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    chart.appendChild(label);
  }
  const target = byId('timeline', HTMLElement);
  replaceContent(target, chart);
  const summary = timeline.marks.length + ' occurrence(s), ' + timeline.gaps.length + ' gap(s) from ' + when(timeline.from) + ' to ' + when(timeline.to);
  target.appendChild(el('p', { class: 'muted', text: summary + (timeline.truncated ? ' (cut: too many to show)' : '') }));
};

/** The job select and the span buttons (aria-pressed tells the span shown). */
export const wireTimeline = (): void => {
  const select = byId('timeline-job', HTMLSelectElement);
  select.addEventListener('change', () => {
    state.key = select.value;
    void loadTimeline();
  });
  const spans = document.querySelectorAll<HTMLButtonElement>('button.span');
  for (const button of spans) {
    button.addEventListener('click', () => {
      state.span = button.getAttribute('data-span') ?? state.span;
      for (const other of spans) other.setAttribute('aria-pressed', String(other === button));
      void loadTimeline();
    });
  }
};
