// The timeline: one job's or dynamic schedule's occurrences over the last hour, 6 h, 24 h or 7
// days, drawn as SVG by hand: a mark per occurrence in its outcome's colour (run now in a lower
// lane) and the gaps where it did not run, or, for a dense job, a bar per round bucket stacked
// by outcome; what is cut or before the job was known is shaded apart; ticks on round times of
// the page's zone. A mark (or a bucket) opens its run.

import { api, newest } from './api';
import type { Timeline, TimelineBucket } from './api-types';
import { byId, el, replaceContent, svg } from './dom';
import { age, clockOf, roundTicks, when } from './format';
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

const OUTCOMES = ['succeeded', 'taken-over', 'missed', 'failed', 'running'] as const;

/** A bucket's text: its stretch and how many occurrences ended how. */
const bucketText = (bucket: TimelineBucket, size: number): string => {
  const start = Date.parse(bucket.from);
  const counts = OUTCOMES.filter((outcome) => bucket[outcome] > 0).map((outcome) => bucket[outcome] + ' ' + outcome);
  if (bucket.notRun) counts.push(bucket.notRun + ' did not run');
  if (bucket.runNow) counts.push(bucket.runNow + ' run now');
  return when(bucket.from) + ' to ' + clockOf(start + size, true) + ': ' + (counts.join(', ') || 'nothing');
};

/** A shaded stretch with its explanation (cut, or before the first known occurrence). */
const stretch = (x0: number, x1: number, kind: string, text: string): SVGRectElement => {
  const rect = svg('rect', { x: x0, y: 0, width: Math.max(1, x1 - x0), height: 30, class: kind, 'data-kind': kind });
  rect.appendChild(svg('title', {})).textContent = text;
  return rect;
};

const drawBuckets = (chart: SVGSVGElement, timeline: Timeline, x: (ms: number) => number): void => {
  const size = timeline.bucketMs ?? 0;
  for (const bucket of timeline.buckets ?? []) {
    const start = Date.parse(bucket.from);
    const left = Math.max(0, x(start));
    const width = Math.max(1, x(start + size) - left - 0.5);
    const group = svg('g', {
      class: 'bucket',
      'data-from': bucket.from,
      'data-counts': OUTCOMES.map((outcome) => outcome + '=' + bucket[outcome]).join(' ') + ' not-run=' + bucket.notRun + ' run-now=' + bucket.runNow,
    });
    group.appendChild(svg('title', {})).textContent = bucketText(bucket, size);
    const scheduled = OUTCOMES.reduce((sum, outcome) => sum + bucket[outcome], 0) + bucket.notRun;
    // The bar is the bucket's occurrences, stacked by outcome in proportion; not run at the top.
    let y = 28;
    for (const outcome of OUTCOMES) {
      if (!bucket[outcome]) continue;
      const height = (bucket[outcome] / scheduled) * 26;
      y -= height;
      group.appendChild(svg('rect', { x: left, y, width, height, class: 'mark ' + outcome }));
    }
    if (bucket.notRun) group.appendChild(svg('rect', { x: left, y: 2, width, height: (bucket.notRun / scheduled) * 26, class: 'gap' }));
    if (bucket.runNow) group.appendChild(svg('rect', { x: left, y: 32, width, height: 14, class: 'mark run-now-bucket' }));
    const runId = bucket.runId;
    if (runId) group.addEventListener('click', () => showRun(runId));
    chart.appendChild(group);
  }
};

const drawMarks = (chart: SVGSVGElement, timeline: Timeline, x: (ms: number) => number): void => {
  for (const gap of timeline.gaps) {
    const x0 = x(Date.parse(gap.from));
    const rect = svg('rect', { x: x0, y: 0, width: Math.max(1, x(Date.parse(gap.to)) - x0), height: 30, class: 'gap' });
    rect.appendChild(svg('title', {})).textContent = 'did not run: ' + gap.occurrences + ' occurrence(s) from ' + when(gap.from);
    chart.appendChild(rect);
  }
  const focusable = timeline.marks.length <= MAX_FOCUSABLE_MARKS;
  for (const mark of timeline.marks) {
    const lower = mark.trigger === 'run-now';
    const rect = svg('rect', {
      x: Math.max(0, x(Date.parse(mark.at)) - 1),
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
};

/** The last timeline drawn (redrawn as it is when the zone changes). */
let shown: Timeline | null = null;

const renderTimeline = (timeline: Timeline): void => {
  shown = timeline;
  const from = Date.parse(timeline.from);
  const to = Date.parse(timeline.to);
  const x = (ms: number): number => ((ms - from) / (to - from)) * WIDTH;
  const occurrences = timeline.buckets
    ? timeline.buckets.reduce((sum, bucket) => sum + OUTCOMES.reduce((n, outcome) => n + bucket[outcome], 0) + bucket.runNow, 0)
    : timeline.marks.length;
  const chart = svg('svg', {
    viewBox: '0 0 ' + WIDTH + ' ' + HEIGHT,
    class: 'chart',
    role: 'img',
    'aria-label': occurrences + ' occurrences of ' + nameOf(state.key),
  });
  chart.appendChild(svg('rect', { x: 0, y: 0, width: WIDTH, height: HEIGHT - 16, class: 'track' }));
  const shownFrom = Date.parse(timeline.shownFrom);
  if (timeline.truncated)
    chart.appendChild(stretch(0, x(shownFrom), 'cut', 'not shown: too many occurrences to read; the newest are shown, from ' + when(timeline.shownFrom)));
  if (timeline.knownSince) {
    chart.appendChild(
      stretch(
        x(shownFrom),
        x(Date.parse(timeline.knownSince)),
        'unknown',
        'before the first known occurrence or deployment (' + when(timeline.knownSince) + '): not judged',
      ),
    );
  }
  if (timeline.buckets) drawBuckets(chart, timeline, x);
  else drawMarks(chart, timeline, x);
  for (const tick of roundTicks(from, to)) {
    const at = x(tick.at);
    chart.appendChild(svg('line', { x1: at, x2: at, y1: HEIGHT - 16, y2: HEIGHT - 12, class: 'tick-line' }));
    const label = svg('text', {
      x: at,
      y: HEIGHT - 2,
      class: 'tick',
      'text-anchor': at < 30 ? 'start' : at > WIDTH - 30 ? 'end' : 'middle',
      'data-at': new Date(tick.at).toISOString(),
    });
    label.textContent = tick.label;
    chart.appendChild(label);
  }
  const target = byId('timeline', HTMLElement);
  replaceContent(target, chart);
  const parts = [
    timeline.buckets
      ? occurrences + ' occurrence(s) in ' + timeline.buckets.length + ' bucket(s) of ' + age(timeline.bucketMs ?? 0)
      : timeline.marks.length + ' occurrence(s), ' + timeline.gaps.length + ' gap(s)',
    'from ' + when(timeline.from) + ' to ' + when(timeline.to),
  ];
  if (timeline.truncated) parts.push('cut: only the newest are shown, from ' + when(timeline.shownFrom));
  if (timeline.knownSince) parts.push('nothing is judged missing before ' + when(timeline.knownSince) + ' (first known occurrence or deployment)');
  target.appendChild(el('p', { class: 'muted', id: 'timeline-summary', text: parts.join('; ') }));
};

/** Draws the last timeline again (the zone changed). */
export const redrawTimeline = (): void => {
  if (shown) renderTimeline(shown);
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
