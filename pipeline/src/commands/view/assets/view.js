// pipeline view: the index and an experiment's page. Each polls a JSON document (every second
// while a run is going or a headline is being rendered, every few seconds otherwise) and redraws
// what it shows from it. Every value is written as text (textContent), never as markup.
(function () {
  'use strict';

  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined) return;
        if (k === 'text') e.textContent = v;
        else if (k === 'class') e.className = v;
        else e.setAttribute(k, v);
      });
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(e, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(e, x); }); return; }
    e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  function replace(node, children) {
    while (node.firstChild) node.removeChild(node.firstChild);
    add(node, children);
  }
  function when(iso) {
    return iso ? iso.replace('T', ' ').replace(/\.\d+/, '').replace(/Z$|\+00:00$/, ' UTC') : '';
  }
  function plural(n, what) { return n + ' ' + what + (n === 1 ? '' : 's'); }
  function enc(id) { return id.split('/').map(encodeURIComponent).join('/'); }
  function clock() {
    var u = document.getElementById('updated');
    if (u) u.textContent = 'updated ' + new Date().toLocaleTimeString();
  }

  // ---- pieces both pages show ----

  var STATE_WORDS = { running: 'running', stopped: 'stopped', complete: 'complete', incomplete: 'incomplete', ended: 'ended' };

  function statusLine(x) {
    var s = x.status;
    var parts = [el('span', { class: 'badge s-' + s.state, 'data-status': s.state, text: STATE_WORDS[s.state] || s.state })];
    if (s.state === 'running') {
      parts.push(' a run is writing it (' + (s.holder.pid ? 'pid ' + s.holder.pid + '; ' : '') + s.holder.how + '); this page updates as its sessions finish');
    } else if (s.state === 'stopped') {
      parts.push(' ', el('strong', { class: 'stop-kind', text: s.kind }), ' at ' + when(s.at) + ': ', el('span', { class: 'stop-detail', text: s.detail }));
    } else if (s.state === 'complete') {
      parts.push(' every planned session is recorded');
    } else if (s.state === 'incomplete') {
      parts.push(' ' + plural(s.missing, 'planned session') + ' not recorded, no run holds the experiment and no stop is recorded (a run killed, or one writing from another machine)');
    } else if (s.state === 'ended') {
      parts.push(' no run holds the experiment; whether every planned session ran cannot be told: ' + s.why);
    }
    var out = [el('p', { class: 'status' }, parts)];
    if (s.resume) out.push(el('p', { class: 'resume' }, 'resume with the same command: ', el('code', { text: s.resume })));
    return out;
  }

  function progressLine(p) {
    var out = [];
    var head = p.planned === null
      ? p.recorded + ' sessions recorded; planned: unknown (' + p.planned_unknown + ')'
      : p.recorded + ' of ' + p.planned + ' planned sessions recorded';
    out.push(el('span', { class: 'recorded', 'data-recorded': p.recorded, 'data-planned': p.planned === null ? '' : p.planned, text: head }));
    out.push(' · ', el('span', { class: 'valid', 'data-valid': p.valid, text: p.valid + ' valid' }));
    out.push(' (' + p.passed + ' passed, ' + p.failed + ' failed' + (p.could_not_score ? ', ' + p.could_not_score + ' could not be scored' : '') + ')');
    var invalid = Object.keys(p.invalid).map(function (k) { return k + ': ' + p.invalid[k]; });
    var nInvalid = Object.keys(p.invalid).reduce(function (a, k) { return a + p.invalid[k]; }, 0);
    out.push(' · ', el('span', { class: 'invalid', 'data-invalid': nInvalid, text: nInvalid + ' invalid' + (invalid.length ? ' (' + invalid.join(', ') + ')' : '') }));
    if (p.replaced) out.push(' · ' + p.replaced + ' replaced by reruns');
    if (p.outside_plan) out.push(' · ', el('span', { class: 'warn', text: plural(p.outside_plan, 'record') + ' outside the plan' }));
    var lines = [el('p', { class: 'progress' }, out)];
    if (p.planned) lines.push(el('progress', { max: p.planned, value: Math.min(p.recorded, p.planned) }));
    if (p.unreadable.length) lines.push(el('ul', { class: 'warn' }, p.unreadable.map(function (u) { return el('li', { text: 'unreadable: ' + u }); })));
    return lines;
  }

  function planLine(x) {
    var m = x.plan;
    if (!m) return el('p', { class: 'plan muted', text: x.plan_problem || 'no plan recorded' });
    var parts = [
      m.models.join(', '),
      m.modules.map(function (d) {
        var arms = m.arms.filter(function (a) { return a.module === d.module; }).map(function (a) { return a.name + ' (' + a.role + ')'; });
        return d.module + ' (' + d.dev + ' dev' + (d.held_out ? ' + ' + d.held_out + ' held-out' : '') + ' tasks; ' + arms.join(' vs ') + ')';
      }).join(', '),
      'k = ' + m.k,
      'split ' + (m.split || 'not recorded'),
      m.transport,
      m.session_mode,
    ];
    if (m.shard) parts.push('shard ' + m.shard);
    parts.push('created ' + when(m.created_at));
    return el('p', { class: 'plan', text: parts.join(' · ') });
  }

  function headline(x, onIndex) {
    var h = x.headline;
    if (h.state === 'running') return [el('p', { class: 'headline-wait muted', text: 'The headline is rendered once the run stops (the report so far is ' + (onIndex ? 'on the experiment\'s page' : 'below') + ').' })];
    if (h.state === 'pending') return [el('p', { class: 'headline-wait muted', text: 'Rendering the report…' })];
    if (h.state === 'refused') {
      return [el('div', { class: 'refused' }, el('p', { text: 'pipeline aggregate refuses to report on this experiment; what it says:' }), el('pre', { class: 'refusal', text: h.error }))];
    }
    if (h.state === 'failed') {
      return [el('div', { class: 'refused' }, el('p', { text: 'Rendering the report failed inside the viewer — a bug in pipeline, not a refusal; the experiment\'s files are untouched. What failed:' }), el('pre', { class: 'refusal', text: h.error }))];
    }
    var out = [];
    var p = x.progress;
    if (x.status.state !== 'complete') {
      out.push(el('p', { class: 'partial', text: 'Over ' + p.recorded + (p.planned === null ? '' : ' of ' + p.planned + ' planned') + ' sessions: the experiment is ' + x.status.state + ', so every figure is over part of the plan.' }));
    }
    h.notices.forEach(function (n) { out.push(el('p', { class: 'notice', text: n })); });
    var cards = null;
    h.blocks.forEach(function (b) {
      if (b.kind === 'card') {
        if (!cards) { cards = el('div', { class: 'cards' }); out.push(cards); }
        cards.appendChild(el('div', { class: 'card', 'data-module': b.module },
          el('div', { class: 'card-head' }, el('strong', { text: b.title }), b.verdict ? el('span', { class: 'badge v-' + b.verdict, text: b.verdict }) : el('span', { class: 'badge', text: 'oracle plan' })),
          el('p', { class: 'reason', text: b.reason }),
          b.metrics.map(function (m) {
            return el('p', { class: 'metric' }, el('span', { class: 'metric-title', text: m.title + (m.estimate ? ' (estimate)' : '') + ': ' }),
              m.arms.map(function (a, i) { return [i ? ' · ' : '', a[0] + ' ', el('strong', { text: a[1] }), a[2] ? ' ' + a[2] : '']; }));
          }),
          b.notes.map(function (n) { return el('p', { class: 'note', text: n }); }),
          el('p', { class: 'muted', text: 'valid / attempted: ' + b.sessions.map(function (s) { return s[0] + ' ' + s[1]; }).join(' · ') })));
      } else {
        cards = null;
        out.push(el(b.kind === 'heading' ? 'h4' : 'p', { text: b.text }));
      }
    });
    return [el('div', { class: 'headline', 'data-ready': 'true' }, out)];
  }

  // ---- polling ----

  function poller(url, draw) {
    var last = null;
    function tick() {
      fetch(url, { cache: 'no-store' }).then(function (r) {
        if (!r.ok) throw new Error(r.status + ' ' + r.statusText);
        return r.text();
      }).then(function (text) {
        var data = JSON.parse(text);
        if (text !== last) { last = text; draw(data); }
        clock();
        setTimeout(tick, busy(data) ? 1000 : 4000);
      }).catch(function (e) {
        var u = document.getElementById('updated');
        if (u) u.textContent = 'the viewer does not answer (' + e.message + '); trying again';
        setTimeout(tick, 4000);
      });
    }
    tick();
  }

  function busy(data) {
    var all = data.experiments ? data.experiments.concat.apply(data.experiments, data.groups.map(function (g) { return g.levels; })) : [data];
    return all.some(function (x) { return x.status.state === 'running' || x.headline.state === 'pending'; });
  }

  // ---- the index ----

  function experimentBlock(x) {
    return el('article', { class: 'exp', 'data-exp': x.id, 'data-state': x.status.state },
      el('h3', null, el('a', { href: x.url, text: x.id })),
      statusLine(x), planLine(x), progressLine(x.progress), headline(x, true));
  }

  function fillSelect(sel, ids) {
    var have = [].map.call(sel.options, function (o) { return o.value; });
    if (have.join('\n') === ids.join('\n')) return;
    var keep = sel.value;
    replace(sel, ids.map(function (id) { return el('option', { value: id, text: id }); }));
    if (ids.indexOf(keep) >= 0) sel.value = keep;
  }

  function drawIndex(d) {
    document.getElementById('where').textContent = 'results: ' + d.results_dir + (d.exists ? '' : ' (does not exist yet)');
    var list = document.getElementById('experiment-list');
    replace(list, d.experiments.length ? d.experiments.map(experimentBlock) : el('p', { class: 'muted', text: 'No experiment in the results folder.' }));
    var groups = document.getElementById('group-list');
    replace(groups, d.groups.length ? d.groups.map(function (g) {
      var about = g.factor
        ? 'A sweep over ' + g.factor + ': each level its own experiment, never pooled.'
        : 'A folder of experiments.';
      var report;
      if (g.sweep_report) {
        var r = g.sweep_report;
        report = el('p', { class: 'sweep-report' }, 'The sweep\'s report as pipeline sweep wrote it (' + when(r.written_at) + '): ',
          r.files.map(function (f, i) { return [i ? ', ' : '', el('a', { href: f[1], text: f[0] })]; }),
          r.newer_levels.length ? el('span', { class: 'warn', text: ' — older than the newest records of ' + r.newer_levels.join(', ') + ': they are not in it (pipeline sweep … --report-only writes it again)' }) : '');
      } else if (g.factor) {
        report = el('p', { class: 'sweep-report muted', text: 'No sweep report: pipeline sweep writes sweep.md, sweep.json and sweep.svg after its last level (or with --report-only), and it cannot be had without writing each level\'s report, which the viewer never does. The levels are listed on their own.' });
      }
      return el('section', { class: 'group', 'data-group': g.name },
        el('h3', { text: g.name }), el('p', { class: 'muted', text: about }), report,
        g.levels.map(experimentBlock));
    }) : el('p', { class: 'muted', text: 'None.' }));
    var ids = d.experiments.map(function (x) { return x.id; });
    d.groups.forEach(function (g) { g.levels.forEach(function (x) { ids.push(x.id); }); });
    fillSelect(document.getElementById('compare-a'), ids);
    fillSelect(document.getElementById('compare-b'), ids);
  }

  // ---- an experiment's page ----

  function experimentId() {
    var path = location.pathname.replace(/^\/e\//, '').replace(/\/$/, '');
    return path.split('/').map(decodeURIComponent).join('/');
  }

  var report = { state: null, status: null };

  function drawExperiment(x) {
    document.title = x.id + ' — ' + x.status.state;
    document.getElementById('title').textContent = x.id;
    replace(document.getElementById('status'), statusLine(x));
    replace(document.getElementById('progress'), progressLine(x.progress));
    replace(document.getElementById('headline'), headline(x, false));
    replace(document.getElementById('plan'), planTable(x));
    var s = x.sessions;
    replace(document.getElementById('sessions'), s.total ? [
      el('p', { class: 'muted', text: s.newest.length < s.total ? 'The newest ' + s.newest.length + ' of ' + s.total + ' sessions; every one is in the report below.' : plural(s.total, 'session') + '.' }),
      el('div', { class: 'scroll' }, el('table', { class: 'sessions' },
        el('thead', null, el('tr', null, ['ended', 'outcome', 'model', 'arm', 'task', 'rep', ''].map(function (h) { return el('th', { text: h }); }))),
        el('tbody', null, s.newest.map(function (r) {
          return el('tr', { 'data-outcome': r.outcome },
            el('td', { text: when(r.ended_at) }),
            el('td', null, el('span', { class: 'o o-' + r.outcome, text: r.outcome.replace(/_/g, ' ') + (r.invalid_reason ? ' (' + r.invalid_reason + ')' : '') })),
            el('td', { text: r.model }), el('td', { text: r.server + ' (' + r.role + ')' }), el('td', null, el('code', { text: r.task })),
            el('td', { text: String(r.rep) }), el('td', null, el('a', { class: 'conversation', href: r.href, text: 'conversation' })));
        }))))] : el('p', { class: 'muted', text: 'No session recorded yet.' }));
    drawReport(x);
  }

  // The trace export as the manifest says: counts are null until the run has written them, and
  // stay null when it was killed first.
  function traces(o, state) {
    if (!o) return 'not exported';
    if (o.sessions === null) {
      return state === 'running' ? 'exporting to ' + o.endpoint + ' (counted when the run ends)'
        : 'to ' + o.endpoint + ': not counted (the run ended before it could write the counts)';
    }
    var line = o.exported_sessions + ' of ' + o.sessions + ' sessions exported to ' + o.endpoint + ' (' + o.exported_spans + ' spans)';
    return o.not_exported_sessions ? line + '; ' + o.not_exported_sessions + ' not exported: ' + (o.last_error || 'no error text') : line;
  }

  function planTable(x) {
    var m = x.plan;
    if (!m) return el('p', { class: 'muted', text: x.plan_problem || 'no plan recorded' });
    var rows = [
      ['models', m.models.join(', ')],
      ['arms', m.arms.map(function (a) { return a.name + ' (' + a.module + ', ' + a.role + ')'; }).join('; ')],
      ['tasks', m.tasks + ' — ' + m.modules.map(function (d) { return d.module + ': ' + d.dev + ' dev, ' + d.held_out + ' held-out'; }).join('; ')],
      ['k (reps)', String(m.k)],
      ['split', m.split || 'not recorded'],
      ['transport', m.transport],
      ['session mode', m.session_mode],
      ['shard', m.shard || 'the whole plan'],
      ['jobs', String(m.jobs)],
      ['created', when(m.created_at)],
      ['binary', m.binary_version || 'not recorded'],
      ['endpoint', m.base_url || 'none (oracle) or not recorded'],
      ['traces', traces(m.otlp, x.status.state)],
      ['command', m.command],
    ];
    return el('table', { class: 'kv' }, el('tbody', null, rows.map(function (r) {
      return el('tr', null, el('th', { text: r[0] }), el('td', null, r[0] === 'command' ? el('code', { text: r[1] }) : r[1]));
    })));
  }

  // The report is loaded once, then again only when asked or when the run stops: a page that
  // reloaded under the reader every second could not be read.
  function drawReport(x) {
    var frame = document.getElementById('report');
    var note = document.getElementById('report-note');
    var p = x.progress;
    var partial = x.status.state === 'complete' ? '' :
      'The experiment is ' + x.status.state + ': this report is over ' + p.recorded + (p.planned === null ? '' : ' of ' + p.planned + ' planned') + ' sessions, so its figures are over part of the plan. ';
    var load = function () {
      report.state = x.state;
      frame.src = 'report.html';
      replace(note, partial ? el('span', { class: 'partial', text: partial }) : '');
    };
    if (report.state === null || (report.status === 'running' && x.status.state !== 'running')) {
      load();
    } else if (report.state !== x.state) {
      replace(note, [partial ? el('span', { class: 'partial', text: partial }) : '', 'Sessions were recorded since this report was rendered. ',
        el('button', { type: 'button', id: 'report-reload', text: 'Render it again' })]);
      document.getElementById('report-reload').addEventListener('click', load);
    }
    report.status = x.status.state;
  }

  if (document.body.dataset.page === 'index') poller('/api/index', drawIndex);
  if (document.body.dataset.page === 'experiment') poller('/api/e/' + enc(experimentId()), drawExperiment);
})();
