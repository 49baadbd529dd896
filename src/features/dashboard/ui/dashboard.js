// The operator dashboard's page script: talks only to the dashboard's JSON API (same origin), builds
// every element with createElement / textContent (no HTML is ever parsed from data), and draws
// the timeline as SVG by hand. Plain ES2020, no dependencies, no build step: served as it is.
'use strict';

(function () {
  var SVG = 'http://www.w3.org/2000/svg';
  var meta = function (name) {
    var element = document.querySelector('meta[name="' + name + '"]');
    return element ? element.getAttribute('content') : '';
  };
  var base = meta('dashboard-base').replace(/\/+$/, '');
  var csrf = meta('dashboard-csrf');
  var state = { jobs: [], timelineJob: '', span: '24h', runsFilter: {}, cursors: [], nextCursor: null };

  var $ = function (id) {
    return document.getElementById(id);
  };

  /** An element with text and attributes; children appended. */
  function el(tag, attributes, children) {
    var element = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (name) {
      if (name === 'text') element.textContent = attributes.text;
      else if (name === 'onclick') element.addEventListener('click', attributes.onclick);
      else element.setAttribute(name, attributes[name]);
    });
    (children || []).forEach(function (child) {
      element.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    });
    return element;
  }

  function svg(tag, attributes) {
    var element = document.createElementNS(SVG, tag);
    Object.keys(attributes).forEach(function (name) {
      element.setAttribute(name, String(attributes[name]));
    });
    return element;
  }

  function say(text, isError) {
    var status = $('status');
    status.textContent = text;
    status.className = isError ? 'error' : '';
  }

  function api(path, options) {
    var method = (options && options.method) || 'GET';
    var headers = { Accept: 'application/json' };
    if (method !== 'GET') headers['X-Dashboard-Csrf'] = csrf;
    return fetch(base + '/api/' + path, { method: method, headers: headers, credentials: 'same-origin' }).then(function (response) {
      return response.json().then(
        function (body) {
          if (!response.ok) throw new Error(response.status + ': ' + (body && body.message ? body.message : response.statusText));
          return body;
        },
        function () {
          throw new Error(response.status + ': ' + response.statusText);
        },
      );
    });
  }

  function when(iso) {
    if (!iso) return '—';
    var date = new Date(iso);
    return date.toLocaleString();
  }

  function age(ms) {
    if (ms < 1000) return ms + ' ms';
    if (ms < 120000) return Math.round(ms / 1000) + ' s';
    if (ms < 7200000) return Math.round(ms / 60000) + ' min';
    return Math.round(ms / 3600000) + ' h';
  }

  function table(headings, rows) {
    var head = el('tr', {}, headings.map(function (text) {
      return el('th', { scope: 'col', text: text });
    }));
    return el('table', {}, [el('thead', {}, [head]), el('tbody', {}, rows)]);
  }

  function cell(content, attributes) {
    return el('td', attributes || {}, [content === null || content === undefined ? '—' : content]);
  }

  function action(label, path, confirmText) {
    return el('button', {
      type: 'button',
      text: label,
      onclick: function () {
        if (confirmText && !window.confirm(confirmText)) return;
        say(label + '…');
        api(path, { method: 'POST' }).then(
          function (result) {
            say(label + ': ' + (result.applied === false ? 'nothing to do' : 'done'));
            refresh();
          },
          function (error) {
            say(label + ' failed: ' + error.message, true);
            refresh();
          },
        );
      },
    });
  }

  // Jobs ------------------------------------------------------------------------------------

  function renderJobs(jobs) {
    state.jobs = jobs;
    var rows = jobs.map(function (job) {
      var path = 'jobs/' + encodeURIComponent(job.name) + '/';
      var health = el('span', { class: 'badge health-' + job.health, text: job.health });
      var pausedNote = job.paused ? el('small', { class: 'muted', text: ' paused by ' + job.paused.by }) : '';
      var toggle = job.paused ? action('Resume', path + 'resume') : action('Pause', path + 'pause', 'Pause ' + job.name + ' on every instance?');
      var show = el('button', {
        type: 'button',
        text: 'Timeline',
        onclick: function () {
          showTimeline('job:' + job.name);
        },
      });
      return el('tr', { 'data-job': job.name }, [
        el('th', { scope: 'row', text: job.name }),
        cell(el('span', { title: job.schedule.expression, text: job.schedule.words })),
        cell(job.schedule.timeZone),
        cell(job.nextDue.length ? el('span', { title: job.nextDue.map(when).join('\n'), text: when(job.nextDue[0]) }) : null),
        cell(when(job.lastSuccessAt)),
        el('td', {}, [health, pausedNote]),
        el('td', { class: 'actions' }, [action('Run now', path + 'run-now'), toggle, show]),
      ]);
    });
    var target = $('jobs');
    target.textContent = '';
    target.appendChild(jobs.length ? table(['Job', 'Schedule', 'Time zone', 'Next due', 'Last success', 'Health', 'Actions'], rows) : el('p', { class: 'muted', text: 'No declared jobs.' }));
    fillJobSelects(jobs);
  }

  function showTimeline(key) {
    state.timelineJob = key;
    $('timeline-job').value = key;
    loadTimeline();
    $('timeline-title').scrollIntoView();
  }

  function optionValues(select) {
    return Array.prototype.map.call(select.options, function (option) {
      return option.value;
    });
  }

  /** Timeline choices ("job:<name>", "schedule:<id>") and the runs filter's codes. */
  function fillSelects(timelineKeys, codes, pickFirst) {
    var select = $('timeline-job');
    var codeSelect = $('runs-code');
    var knownKeys = optionValues(select);
    var knownCodes = optionValues(codeSelect);
    timelineKeys.forEach(function (entry) {
      if (knownKeys.indexOf(entry.key) < 0) select.appendChild(el('option', { value: entry.key, text: entry.label }));
    });
    codes.forEach(function (code) {
      if (knownCodes.indexOf(code) < 0) {
        codeSelect.appendChild(el('option', { value: code, text: code }));
        knownCodes.push(code);
      }
    });
    if (pickFirst && !state.timelineJob && timelineKeys.length) {
      state.timelineJob = timelineKeys[0].key;
      select.value = state.timelineJob;
      loadTimeline();
    }
  }

  function fillJobSelects(jobs) {
    fillSelects(
      jobs.map(function (job) {
        return { key: 'job:' + job.name, label: job.name };
      }),
      jobs.map(function (job) {
        return job.name;
      }),
      true,
    );
  }

  // Dynamic schedules -------------------------------------------------------------------------

  function loadSchedules() {
    return api('schedules').then(function (page) {
      var section = $('schedules-section');
      section.hidden = page.schedules.length === 0;
      var rows = page.schedules.map(function (schedule) {
        var path = 'schedules/' + encodeURIComponent(schedule.id) + '/';
        return el('tr', { 'data-schedule': schedule.id }, [
          el('th', { scope: 'row', text: schedule.id }),
          cell(schedule.handler),
          cell(el('span', { title: schedule.schedule.expression, text: schedule.schedule.words })),
          cell(schedule.schedule.timeZone),
          cell(schedule.nextDue.length ? el('span', { title: schedule.nextDue.map(when).join('\n'), text: when(schedule.nextDue[0]) }) : null),
          el('td', {}, [el('span', { class: 'badge health-' + (schedule.enabled ? 'ok' : 'disabled'), text: schedule.enabled ? 'enabled' : 'disabled' })]),
          cell(schedule.tenantId),
          el('td', { class: 'actions' }, [
            action('Run now', path + 'run-now'),
            schedule.enabled ? action('Pause', path + 'pause', 'Pause the schedule ' + schedule.id + ' on every instance?') : action('Resume', path + 'resume'),
            el('button', { type: 'button', text: 'Timeline', onclick: function () {
              showTimeline('schedule:' + schedule.id);
            } }),
          ]),
        ]);
      });
      var target = $('schedules');
      target.textContent = '';
      target.appendChild(table(['Id', 'Handler', 'Schedule', 'Time zone', 'Next due', 'State', 'Tenant', 'Actions'], rows));
      if (page.nextCursor) target.appendChild(el('p', { class: 'muted', text: 'The first 100 schedules (by id) are shown.' }));
      fillSelects(
        page.schedules.map(function (schedule) {
          return { key: 'schedule:' + schedule.id, label: schedule.id + ' (' + schedule.handler + ')' };
        }),
        page.schedules.map(function (schedule) {
          return schedule.handler;
        }),
        state.jobs.length === 0,
      );
    }, function (error) {
      say('Schedules: ' + error.message, true);
    });
  }

  // Timeline --------------------------------------------------------------------------------

  var WIDTH = 1000;
  var HEIGHT = 64;

  function loadTimeline() {
    if (!state.timelineJob) return Promise.resolve();
    var separator = state.timelineJob.indexOf(':');
    var kind = state.timelineJob.slice(0, separator);
    var name = state.timelineJob.slice(separator + 1);
    var path = (kind === 'schedule' ? 'schedules/' : 'jobs/') + encodeURIComponent(name) + '/timeline?span=' + state.span;
    return api(path).then(newest('timeline', renderTimeline), function (error) {
      say('Timeline: ' + error.message, true);
    });
  }

  function renderTimeline(timeline) {
    var from = Date.parse(timeline.from);
    var to = Date.parse(timeline.to);
    var x = function (iso) {
      return ((Date.parse(iso) - from) / (to - from)) * WIDTH;
    };
    var chart = svg('svg', { viewBox: '0 0 ' + WIDTH + ' ' + HEIGHT, class: 'chart', role: 'img', 'aria-label': timeline.marks.length + ' occurrences of ' + state.timelineJob.slice(state.timelineJob.indexOf(':') + 1) });
    chart.appendChild(svg('rect', { x: 0, y: 0, width: WIDTH, height: HEIGHT - 16, class: 'track' }));
    timeline.gaps.forEach(function (gap) {
      var rect = svg('rect', { x: x(gap.from), y: 0, width: Math.max(1, x(gap.to) - x(gap.from)), height: 30, class: 'gap' });
      rect.appendChild(svg('title', {})).textContent = 'did not run: ' + gap.occurrences + ' occurrence(s) from ' + when(gap.from);
      chart.appendChild(rect);
    });
    var focusable = timeline.marks.length <= 300;
    timeline.marks.forEach(function (mark) {
      var lower = mark.trigger === 'run-now';
      var rect = svg('rect', { x: Math.max(0, x(mark.at) - 1), y: lower ? 32 : 2, width: 3, height: lower ? 14 : 26, class: 'mark ' + mark.outcome + (lower ? ' run-now' : ''), 'data-outcome': mark.outcome, 'data-at': mark.at });
      rect.appendChild(svg('title', {})).textContent = when(mark.at) + ': ' + mark.outcome + (lower ? ' (run now)' : '') + (mark.runs > 1 ? ', ' + mark.runs + ' runs' : '');
      if (focusable) {
        rect.setAttribute('tabindex', '0');
        rect.setAttribute('role', 'button');
        rect.setAttribute('aria-label', rect.textContent);
        rect.addEventListener('keydown', function (event) {
          if (event.key === 'Enter' || event.key === ' ') showRun(mark.runId);
        });
      }
      rect.addEventListener('click', function () {
        showRun(mark.runId);
      });
      chart.appendChild(rect);
    });
    var ticks = state.span === '7d' ? 7 : 6;
    for (var index = 0; index <= ticks; index++) {
      var at = from + ((to - from) * index) / ticks;
      var label = svg('text', { x: (WIDTH * index) / ticks, y: HEIGHT - 2, class: 'tick', 'text-anchor': index === 0 ? 'start' : index === ticks ? 'end' : 'middle' });
      label.textContent = state.span === '7d' ? new Date(at).toLocaleDateString() : new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
      chart.appendChild(label);
    }
    var target = $('timeline');
    target.textContent = '';
    target.appendChild(chart);
    var summary = timeline.marks.length + ' occurrence(s), ' + timeline.gaps.length + ' gap(s) from ' + when(timeline.from) + ' to ' + when(timeline.to);
    target.appendChild(el('p', { class: 'muted', text: summary + (timeline.truncated ? ' (cut: too many to show)' : '') }));
  }

  // Runs ------------------------------------------------------------------------------------

  function runsQuery(cursor) {
    var parts = ['limit=50'];
    Object.keys(state.runsFilter).forEach(function (name) {
      if (state.runsFilter[name]) parts.push(name + '=' + encodeURIComponent(state.runsFilter[name]));
    });
    if (cursor) parts.push('cursor=' + encodeURIComponent(cursor));
    return 'runs?' + parts.join('&');
  }

  /** Answers that arrive after a newer request's are dropped (a refresh must not undo a filter). */
  var latest = { runs: 0, timeline: 0 };
  function newest(kind, handle) {
    var ticket = ++latest[kind];
    return function (value) {
      if (ticket === latest[kind]) handle(value);
    };
  }

  function loadRuns(cursor) {
    return api(runsQuery(cursor)).then(newest('runs', function (page) {
      state.nextCursor = page.nextCursor;
      $('runs-next').disabled = !page.nextCursor;
      var rows = page.runs.map(function (run) {
        return el('tr', { 'data-run': run.id }, [
          el('td', {}, [el('button', { type: 'button', class: 'link', text: run.id.slice(0, 8), 'aria-label': 'Run ' + run.id, onclick: function () {
            showRun(run.id);
          } })]),
          cell(run.code),
          el('td', {}, [el('span', { class: 'badge status-' + run.status, text: run.status })]),
          cell(run.runKey),
          cell(String(run.attempts)),
          cell(String(run.fencingToken)),
          cell(run.ownerId),
          cell(when(run.createdAt)),
          cell(when(run.finishedAt)),
        ]);
      });
      var target = $('runs');
      target.textContent = '';
      target.appendChild(rows.length ? table(['Run', 'Job', 'Status', 'Run key', 'Attempts', 'Fencing token', 'Owner', 'Created', 'Finished'], rows) : el('p', { class: 'muted', text: 'No runs match.' }));
    }), function (error) {
      say('Runs: ' + error.message, true);
    });
  }

  function showRun(id) {
    api('runs/' + encodeURIComponent(id)).then(function (run) {
      var fields = $('run-detail-fields');
      fields.textContent = '';
      [
        ['Id', run.id], ['Job', run.code], ['Status', run.status], ['Run key', run.runKey], ['Attempts', String(run.attempts)],
        ['Fencing token', String(run.fencingToken)], ['Owner', run.ownerId], ['Lease', run.leaseMs === null ? null : run.leaseMs + ' ms'],
        ['Created', when(run.createdAt)], ['Started', when(run.startedAt)], ['Finished', when(run.finishedAt)],
        ['Last write', when(run.modifiedAt) + ' (' + age(run.heartbeatAgeMs) + ' ago)'],
      ].forEach(function (pair) {
        fields.appendChild(el('dt', { text: pair[0] }));
        fields.appendChild(el('dd', { text: pair[1] === null || pair[1] === undefined ? '—' : pair[1] }));
      });
      $('run-detail-data').textContent = JSON.stringify(run.data, null, 2);
      $('run-detail-error').textContent = JSON.stringify(run.lastError, null, 2);
      $('run-detail').showModal();
    }, function (error) {
      say('Run: ' + error.message, true);
    });
  }

  // Leases ----------------------------------------------------------------------------------

  function loadLeases() {
    return api('leases/expired').then(function (body) {
      var rows = body.leases.map(function (lease) {
        var path = 'runs/' + encodeURIComponent(lease.id) + '/release?fencingToken=' + encodeURIComponent(String(lease.fencingToken));
        return el('tr', { 'data-lease': lease.id }, [
          cell(lease.code),
          cell(lease.runKey),
          cell(lease.ownerId),
          cell(age(lease.heartbeatAgeMs)),
          cell(age(lease.overdueMs)),
          cell(String(lease.fencingToken)),
          el('td', { class: 'actions' }, [action('Release', path, 'Release the lease of ' + lease.code + ' (fencing token ' + lease.fencingToken + ')? Its run is recorded failed.')]),
        ]);
      });
      var target = $('leases');
      target.textContent = '';
      target.appendChild(rows.length ? table(['Job', 'Run key', 'Owner', 'Heartbeat age', 'Past its lease by', 'Fencing token', 'Actions'], rows) : el('p', { class: 'muted', text: 'None.' }));
    }, function (error) {
      say('Leases: ' + error.message, true);
    });
  }

  // Wiring ----------------------------------------------------------------------------------

  function refresh() {
    return Promise.all([
      // The schedules after the jobs: the first job (else the first schedule) is the timeline shown at first.
      api('jobs').then(function (body) {
        renderJobs(body.jobs);
      }, function (error) {
        say('Jobs: ' + error.message, true);
      }).then(loadSchedules),
      loadTimeline(),
      loadRuns(state.cursors[state.cursors.length - 1]),
      loadLeases(),
    ]).then(function () {
      document.body.setAttribute('data-loaded', String(Date.now()));
    });
  }

  function isoOf(local) {
    return local ? new Date(local).toISOString() : '';
  }

  document.addEventListener('DOMContentLoaded', function () {
    $('refresh').addEventListener('click', function () {
      say('');
      refresh();
    });
    $('timeline-job').addEventListener('change', function (event) {
      state.timelineJob = event.target.value;
      loadTimeline();
    });
    Array.prototype.forEach.call(document.querySelectorAll('button.span'), function (button) {
      button.addEventListener('click', function () {
        state.span = button.getAttribute('data-span');
        Array.prototype.forEach.call(document.querySelectorAll('button.span'), function (other) {
          other.setAttribute('aria-pressed', String(other === button));
        });
        loadTimeline();
      });
    });
    $('run-filters').addEventListener('submit', function (event) {
      event.preventDefault();
      var form = event.target;
      state.runsFilter = { code: form.code.value, status: form.status.value, from: isoOf(form.from.value), to: isoOf(form.to.value) };
      state.cursors = [];
      loadRuns();
    });
    $('runs-next').addEventListener('click', function () {
      if (!state.nextCursor) return;
      state.cursors.push(state.nextCursor);
      loadRuns(state.nextCursor);
    });
    $('runs-first').addEventListener('click', function () {
      state.cursors = [];
      loadRuns();
    });
    $('run-detail-close').addEventListener('click', function () {
      $('run-detail').close();
    });
    refresh();
    setInterval(function () {
      if (!document.hidden) refresh();
    }, 15000);
  });
})();
