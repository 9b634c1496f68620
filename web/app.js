/* poolwatch dashboard: fleet overview, host page, tag page over /api/v1 (docs/openapi.json).
 * Plain JS, no build step. Routes live in the URL fragment: #/ (fleet), #/host/NAME,
 * #/tag/TAG. The bearer token comes from the login box or from a link ending in #token=...,
 * and is kept in sessionStorage (this tab only). Charts: uPlot (web/package.json). */
'use strict';

const TOKEN_KEY = 'poolwatch.token';
const REFRESH_MS = 30000;
const SPARK_POINTS = 60;     /* points drawn in a fleet sparkline */
const SPARK_PARALLEL = 4;    /* host history requests at once (the browser allows 6) */

/* ---- token and API ------------------------------------------------------------------------ */

/* A link carrying the token logs in and opens the page it names: `#token=T` (the fleet) or
 * `#/host/NAME?range=7d&token=T` (any page: the token is one of its parameters). The token is
 * then taken out of the visible URL and the history (replaceState); the rest of the link stays. */
(function takeLinkToken() {
  const h = location.hash;
  let tok = null, rest = '#/';
  const m = /^#token=([^&]+)/.exec(h);
  if (m) {
    try { tok = decodeURIComponent(m[1]); } catch (e) { tok = m[1]; }
  } else {
    const qi = h.indexOf('?');
    const p = new URLSearchParams(qi < 0 ? '' : h.slice(qi + 1));
    if (p.get('token')) {
      tok = p.get('token');
      p.delete('token');
      const q = p.toString();
      rest = h.slice(0, qi) + (q ? '?' + q : '');
    }
  }
  if (tok) {
    sessionStorage.setItem(TOKEN_KEY, tok);
    history.replaceState(null, '', location.pathname + location.search + rest);
  }
})();

class AuthError extends Error {}

async function api(path) {
  const tok = sessionStorage.getItem(TOKEN_KEY);
  if (!tok) throw new AuthError('no token');
  const r = await fetch(path, { headers: { Authorization: 'Bearer ' + tok } });
  if (r.status === 401) throw new AuthError('the server refused this token');
  const body = await r.json().catch(() => null);
  if (!r.ok) {
    const msg = body && body.error ? body.error.message : r.statusText;
    const e = new Error(`${r.status} ${msg}`);
    e.status = r.status;
    throw e;
  }
  return body;
}

/* The fleet is asked for at once, before the DOM and uPlot are ready: the first paint waits
 * for nothing else. */
let hostsPrefetch = sessionStorage.getItem(TOKEN_KEY) && routeOf().view === 'fleet'
  ? api('/api/v1/hosts') : null;
if (hostsPrefetch) hostsPrefetch.catch(() => {});

/* ---- formatting --------------------------------------------------------------------------- */

const $ = (sel, root = document) => root.querySelector(sel);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g,
  (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

function fmtBytes(n) {
  if (n == null) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0, v = Number(n);
  while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0) : String(v)) + ' ' + u[i];
}
/* A pool limit the agent could not give (imported captures, Linux, replay hosts: null in the
 * API, 0 from an older collector) is unknown: never "0 B" at "0.0%", which reads as healthy. */
function limitText(l) { return l ? fmtBytes(l) : '<span class="mute" title="pool limit unknown">unknown</span>'; }
function fmtPct(r) { return r == null ? '—' : (r * 100).toFixed(1) + '%'; }
function limitPct(r, l) { return l ? fmtPct(r) : '<span class="mute" title="pool limit unknown">—</span>'; }
function limitLevel(lvl, l) { return l ? lvl : 'unknown'; }
function fmtDur(ms) {
  if (ms <= 0) return 'now';
  const m = Math.round(ms / 60000);
  if (m < 60) return m + ' min';
  const h = Math.floor(m / 60);
  if (h < 48) return h + ' h ' + (m % 60) + ' min';
  return Math.round(h / 24) + ' days';
}
/* Times are UTC, 24 h, as the CLI prints them ("2026-12-02 14:05:09Z"): a fleet spans time
 * zones, and the dashboard and `poolwatch` must read the same. */
function fmtTime(ms) {
  if (ms == null || !Number.isFinite(Number(ms))) return '—';
  return new Date(Number(ms)).toISOString().slice(0, 19).replace('T', ' ') + 'Z';
}
function fmtClock(ms) { return fmtTime(ms).slice(11); } /* "14:05:09Z" */
/* When a pool runs out (HTML): its UTC time as the CLI prints it, and how long that is after
 * the host's newest sample (`last`, the ETA's base), not after the browser's clock: an old
 * capture's ETA is not "already past". A host whose newest sample is at most 15 min old reads
 * "in X"; an older one "X after its last sample". Without `last`, the time alone. */
const ETA_FRESH_MS = 15 * 60000;
function etaRel(eta, last) {
  if (last == null || !last) return '';
  const d = eta - last;
  if (Math.abs(Date.now() - last) <= ETA_FRESH_MS) return d <= 0 ? 'now' : 'in ' + fmtDur(d);
  return d <= 0 ? 'at its last sample' : fmtDur(d) + ' after its last sample';
}
/* A pool that already ran out (ranOut: the API's *_ran_out_ms) says so: never "in now". */
function fmtEta(eta, last, ranOut) {
  if (ranOut != null) return 'ran out ' + fmtDur(Date.now() - ranOut) + ' ago';
  if (eta == null) return '—';
  const rel = etaRel(eta, last);
  return `<span class="eta-at">${esc(fmtTime(eta))}</span>` + (rel ? ` <span class="eta-rel">${esc(rel)}</span>` : '');
}
function fmtAgo(ms) { return ms ? fmtDur(Date.now() - ms) + ' ago' : '—'; }
function fmtChg(v) { return v == null ? '' : v > 0 ? '+' + v : String(v); }
function chgClass(v) { return v > 0 ? 'chg up' : v < 0 ? 'chg down' : 'chg'; }
/* A host's connection, shown apart from its pool pressure (API `connection`; an older collector
 * gives only `connected`). */
/* Before the analysis' first pass since the collector started (the API's /leaks `first_pass_ms`,
 * about 30 s) no host is judged: an empty list then is "not judged yet", not "no leak". */
function notJudged(lk) {
  return lk && lk.first_pass_ms ? `<span class="pending" id="not-judged">analysis has not run yet (first pass at ${esc(fmtClock(lk.first_pass_ms))}):` +
    ' no host is judged before it</span>' : '';
}
function connState(h) { return h.connection || (h.connected ? 'streaming' : 'disconnected'); }
/* A host whose history streams in (API `loading_history`: a backfill, a spool resent after an
 * outage): its newest sample is old and its level and ETA are of that time, not of now. */
const LOADING_TITLE = 'its agent is sending older samples faster than real time (a backfill, or a spool resent ' +
  'after an outage): the level, ETA and suspects are of its newest sample so far, not of now';
function loadingHtml(h) {
  return `<span class="loading" title="${esc(LOADING_TITLE)}">loading history, at ${esc(fmtTime(h.last_seen_ms))}</span>`;
}
function connHtml(h) {
  if (h.loading_history) return `<span class="conn streaming">${esc(connState(h))}</span> ${loadingHtml(h)}`;
  const c = connState(h);
  const why = c === 'stopped' && h.stop_reason ? ' (' + esc(h.stop_reason) + ')' : '';
  const title = { streaming: 'an agent session streams samples', stopped: 'its agent said goodbye: a clean stop, no HostSilent',
    silent: 'it streamed and has sent nothing for its silence time: HostSilent', imported: 'an imported capture',
    disconnected: 'no agent session' }[c] || '';
  return `<span class="conn ${esc(c)}" title="${esc(title)}">${esc(c)}${why}</span> ` +
    `<span class="mute">${c === 'streaming' ? fmtAgo(h.last_seen_ms) : 'last sample ' + fmtAgo(h.last_seen_ms)}</span>`;
}
function hostLink(h, owner) {
  /* the global view ([fleet] query_url): a host of another collector opens on its owner */
  const base = owner && new URL(owner).origin !== location.origin ? new URL(owner).origin + '/' : '';
  return `<a href="${esc(base)}#/host/${encodeURIComponent(h)}">${esc(h)}</a>` +
    (base ? ` <span class="mute" title="held by ${esc(owner)}">↗</span>` : '');
}
function tagLink(t) { return `<a class="tagtxt" href="#/tag/${encodeURIComponent(t)}">${esc(t)}</a>`; }
function level(l) { return `<span class="lvl ${esc(l || 'unknown')}" title="${esc(l || 'unknown')}"></span>`; }
function bar(ratio, lvl) {
  const w = Math.max(0, Math.min(100, (ratio || 0) * 100));
  return `<span class="bar ${esc(lvl || '')}"><i style="width:${w.toFixed(1)}%"></i></span>`;
}

function status(msg, err) {
  const s = $('#status');
  s.textContent = msg;
  s.className = err ? 'err' : '';
}

/* ---- router ------------------------------------------------------------------------------- */

/* #/VIEW/ARG?k=v&...: ARG and the values percent-encoded (a host or tag may hold '/' or '?'). */
function routeOf() {
  const h = location.hash.replace(/^#\/?/, '');
  const qi = h.indexOf('?');
  const path = qi < 0 ? h : h.slice(0, qi);
  const params = Object.fromEntries(new URLSearchParams(qi < 0 ? '' : h.slice(qi + 1)));
  const [view, ...rest] = path.split('/');
  let arg = '';
  try { arg = rest.length ? decodeURIComponent(rest.join('/')) : ''; } catch (e) { arg = null; }
  if (view === 'host' && arg) return { view: 'host', arg, params };
  if (view === 'tag' && arg) return { view: 'tag', arg, params };
  if (view === '' && !rest.length) return { view: 'fleet', arg: '', params };
  return { view: 'notfound', arg: h, params };
}
function hostHref(host, params) {
  const q = params ? new URLSearchParams(params).toString() : '';
  return '#/host/' + encodeURIComponent(host) + (q ? '?' + q : '');
}

let current = null; /* { view, arg, refresh() } */
let timer = null;

function showLogin(msg) {
  current = null;
  $('#login').hidden = false;
  $('#login-msg').textContent = msg || '';
  $('#logout').hidden = true;
  $('#view').innerHTML = '';
  $('#token').focus();
}

async function run(fn) {
  try {
    await fn();
    status('updated ' + fmtClock(Date.now()));
  } catch (e) {
    if (e instanceof AuthError) showLogin(e.message === 'no token' ? '' : e.message);
    else if (e.status === 404 && current && (current.view === 'host' || current.view === 'tag')) {
      /* the page's subject itself is unknown (a retired or renamed host, a mistyped tag) */
      $('#view').innerHTML = `<h1>Not found</h1><p class="err">${esc(e.message)}</p>` +
        '<p><a href="#/">Back to the fleet</a></p>';
      document.body.dataset.view = 'notfound';
      clearInterval(timer); /* nothing to refresh: a host or tag that is not there */
      current = null;
      ready();
      status(e.message, true);
    } else status(e.message, true);
  }
}

function navigate() {
  clearInterval(timer);
  if (!sessionStorage.getItem(TOKEN_KEY)) { showLogin(''); return; }
  $('#login').hidden = true;
  $('#logout').hidden = false;
  const r = routeOf();
  /* Another tag or range on the page shown: that page redraws its chart, nothing else. */
  if (current && current.route && current.view === r.view && current.arg === r.arg) {
    run(() => current.route(r.params));
  } else {
    document.body.dataset.view = r.view;
    document.body.dataset.state = 'loading';
    const views = { fleet: fleetView, host: hostView, tag: tagView, notfound: notFoundView };
    current = views[r.view](r.arg, r.params);
    current.view = r.view;
    current.arg = r.arg;
    run(current.refresh);
  }
  timer = setInterval(() => { if (!document.hidden) run(current.refresh); }, REFRESH_MS);
}

function ready() { document.body.dataset.state = 'ready'; }

/* ---- charts ------------------------------------------------------------------------------- */

function whenUplot() {
  return window.uPlot ? Promise.resolve() : new Promise((res) => addEventListener('load', res));
}

/* Ranges the history charts offer: span and the series step asked for (about 300-700 points;
 * the store answers a step from its raw samples, 1-min or 15-min rollups, docs/openapi.json). */
const RANGES = {
  '6h': { label: '6 h', ms: 6 * 3600e3, step: 60e3 },
  '24h': { label: '24 h', ms: 24 * 3600e3, step: 300e3 },
  '7d': { label: '7 d', ms: 7 * 86400e3, step: 1800e3 },
  '30d': { label: '30 d', ms: 30 * 86400e3, step: 3600e3 },
};
const PALETTE = ['#1f4e79', '#c62828', '#2e8b57', '#d98b00', '#6a3d9a', '#00838f', '#8d6e63', '#5c6bc0'];
const fmtCount = (n) => (n == null ? '—' : Math.round(n).toLocaleString('en-US'));

function rangeButtons(cur) {
  return '<span class="ranges" role="group" aria-label="range">' + Object.entries(RANGES).map(([k, r]) =>
    `<button type="button" data-range="${k}" class="${k === cur ? 'on' : ''}">${r.label}</button>`).join('') + '</span>';
}

/* Width of the widest y-axis label in the chart font, plus the tick and a margin: long labels
 * ("1,234,567" or "123.4 MiB") are never cut. */
let measureCtx = null;
function axisSize(u, values) {
  if (!values) return 50;
  measureCtx = measureCtx || document.createElement('canvas').getContext('2d');
  measureCtx.font = '12px system-ui, -apple-system, "Segoe UI", sans-serif';
  return Math.ceil(Math.max(0, ...values.map((v) => measureCtx.measureText(String(v)).width))) + 24;
}

/* Vertical markers at event times (ms): [{ ts_ms, color, label }], drawn over the plot with
 * their label at the top; those outside the x range are not drawn. */
function markPlugin(marks) {
  return {
    hooks: {
      draw: [(u) => {
        const ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
        const [lo, hi] = [u.scales.x.min, u.scales.x.max];
        ctx.save();
        ctx.font = `${Math.round(11 * devicePixelRatio)}px system-ui, sans-serif`;
        for (const m of marks) {
          const x = m.ts_ms / 1000;
          if (x < lo || x > hi) continue;
          const px = Math.round(u.valToPos(x, 'x', true));
          ctx.strokeStyle = m.color;
          ctx.fillStyle = m.color;
          ctx.lineWidth = 2 * devicePixelRatio;
          ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
          ctx.beginPath();
          ctx.moveTo(px, top);
          ctx.lineTo(px, top + h);
          ctx.stroke();
          ctx.fillText(m.short, px + 3 * devicePixelRatio, top + 12 * devicePixelRatio);
        }
        ctx.restore();
      }],
    },
  };
}

/* A host's pool events (GET /hosts/{host}/events) as chart markers: srv 2019 / 2020 red
 * ("pool empty"), 2004 orange; `tag`/`pool`: a 2004 that names that tag says so. */
function eventMarks(events, tag, pool) {
  return (events || []).map((e) => {
    const named = tag && e.tags.some((t) => t.tag === tag && t.pool === pool);
    const short = e.kind === 'low_virtual_memory' ? (named ? '2004 names it' : '2004')
      : `${e.event_id} ${e.pool} empty`;
    return { ts_ms: e.ts_ms, color: e.kind === 'low_virtual_memory' ? '#e65100' : '#c62828', short,
      label: `${e.provider} ${e.event_id}: ${e.message}` + (named ? ` (names ${tag})` : '') };
  });
}

/* The time axis' labels, UTC and 24 h: "HH:MM" (":SS" under a minute), the date ("MM-DD")
 * under the first tick and under each tick of a new day, "MM-DD" alone for ticks a day or more
 * apart. uPlot places the ticks on UTC boundaries (tzDate below). */
function utcTicks(splits, incr) {
  let day = '';
  return splits.map((x) => {
    const t = fmtTime(x * 1000), d = t.slice(5, 10), hm = incr < 60 ? t.slice(11, 19) : t.slice(11, 16);
    if (incr >= 86400) return d;
    const lab = d !== day ? hm + '\n' + d : hm;
    day = d;
    return lab;
  });
}

/* A horizontal line's label (the pool's limit): its text at the right end of the plot, above
 * the line, in the line's colour. label: { text, color, value () => the y value }. */
function lineLabelPlugin(label) {
  return {
    hooks: {
      draw: [(u) => {
        const v = label.value();
        if (v == null) return;
        const ctx = u.ctx, y = Math.round(u.valToPos(v, 'y', true));
        ctx.save();
        ctx.font = `${Math.round(11 * devicePixelRatio)}px system-ui, sans-serif`;
        ctx.fillStyle = label.color;
        ctx.textAlign = 'right';
        ctx.textBaseline = 'bottom';
        ctx.fillText(label.text, u.bbox.left + u.bbox.width - 4 * devicePixelRatio, y - 3 * devicePixelRatio);
        ctx.restore();
      }],
    },
  };
}

/* A uPlot chart in el: xs in ms, series [{label, key, values, color, dash}] (null = no point;
 * key names the series in chartData, default its label). opts: width (default: the element's
 * container), height, time (x is time, UTC, default true), yfmt, xfmt, zero (the y axis starts
 * at 0), marks (eventMarks: vertical markers), lineLabel (lineLabelPlugin's). The drawn data
 * stay on el.chartData for the tests: { xs, series: { key: values }, marks, xticks: [[x ms,
 * label]], lineLabel }. */
async function lineChart(el, xs, series, opts = {}) {
  await whenUplot();
  el.innerHTML = '';
  const yfmt = opts.yfmt || fmtBytes;
  const data = [xs.map((x) => x / 1000), ...series.map((s) => s.values)];
  const avail = Math.floor((el.parentElement ? el.parentElement.clientWidth : 720) - 12);
  const time = opts.time !== false;
  const xticks = [];
  const o = {
    width: opts.width || Math.max(320, Math.min(avail, opts.maxWidth || 900)), height: opts.height || 240,
    scales: { x: { time } },
    axes: [{}, { values: (u, v) => v.map((b) => yfmt(b)), size: axisSize }],
    series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: s.dash ? 1.2 : 1.6,
      dash: s.dash, spanGaps: true, paths: s.bars ? uPlot.paths.bars({ size: [0.9] }) : undefined,
      points: { show: s.points ?? 'auto' }, fill: s.bars ? s.color + '55' : undefined,
      value: (u, v) => (v == null ? '—' : yfmt(v)) }))],
  };
  if (time) {
    o.tzDate = (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC');
    o.axes[0] = { values: (u, splits, ax, space, incr) => {
      const labs = utcTicks(splits, incr);
      xticks.length = 0;
      splits.forEach((x, i) => xticks.push([x * 1000, labs[i]]));
      return labs;
    } };
    o.series[0] = { label: 'UTC', value: (u, v) => (v == null ? '—' : fmtTime(v * 1000)) };
  }
  if (opts.zero) o.scales.y = { range: (u, lo, hi) => [0, hi > 0 ? hi * 1.08 : 1] };
  if (opts.xfmt) o.axes[0] = { values: (u, v) => v.map(opts.xfmt) };
  const marks = opts.marks || [];
  o.plugins = [];
  if (marks.length) o.plugins.push(markPlugin(marks));
  if (opts.lineLabel) o.plugins.push(lineLabelPlugin(opts.lineLabel));
  el.chartData = { xs, series: Object.fromEntries(series.map((s) => [s.key || s.label, s.values])),
    marks: marks.map((m) => ({ ts_ms: m.ts_ms, label: m.label, short: m.short })), xticks,
    lineLabel: opts.lineLabel ? opts.lineLabel.text : null };
  el.uplot = new uPlot(o, data, el);
  return el.uplot;
}

/* A tag's series on a host over a range (RANGES key), ending now. */
function seriesQuery(host, tag, pool, range) {
  const r = RANGES[range] || RANGES['24h'];
  const to = Date.now();
  return `/api/v1/hosts/${encodeURIComponent(host)}/series?` +
    new URLSearchParams({ tag, pool, from: Math.floor(to - r.ms), to, step: r.step });
}

/* The engine's fit over the charted points: slope is its Theil-Sen rate (growth_bytes_per_h),
 * the intercept the median of bytes - slope x over the points from since_ms on, as Sen's line
 * is placed (Sen 1968); drawn from since_ms on. A point stands for its step [x, x + step): it
 * counts when its step ends after since_ms. */
function fitLine(xs, ys, s, step) {
  const k = s.growth_bytes_per_h / 3600e3, from = s.since_ms || 0;
  const inFit = (x) => x + step > from;
  const res = [];
  xs.forEach((x, i) => { if (inFit(x) && ys[i] != null) res.push(ys[i] - k * x); });
  if (!res.length) return null;
  res.sort((a, b) => a - b);
  const m = res.length >> 1, b0 = res.length % 2 ? res[m] : (res[m - 1] + res[m]) / 2;
  return xs.map((x) => (inFit(x) ? k * x + b0 : null));
}

/* What a chart's points are: one per step (the last value of each step that has a sample).
 * When the host's samples are further apart than the step (an import's 15-min screens at the
 * 1-min level), a point per step would be a false "one per 1 min": the points' own spacing
 * (their median gap) is said instead, with the step. */
function pointsNote(xs, level, stepMs) {
  const gaps = [];
  for (let i = 1; i < xs.length; i++) gaps.push(xs[i] - xs[i - 1]);
  gaps.sort((a, b) => a - b);
  const gap = gaps.length ? gaps[gaps.length >> 1] : 0;
  const per = gap >= 2 * stepMs
    ? `about one per ${fmtDur(gap)}, as the samples came (steps of ${fmtDur(stepMs)}, last value of each)`
    : `one per ${fmtDur(stepMs)} (last value of each)`;
  return `${xs.length} point${xs.length === 1 ? '' : 's'}, ${level} level, ${per}`;
}

/* Sparkline of a host's nonpaged history (SVG, cheap enough for a thousand rows). */
function sparkSvg(hist, limit) {
  if (!hist || hist.length < 2) return '<span class="mute">—</span>';
  const step = Math.max(1, Math.ceil(hist.length / SPARK_POINTS));
  const pts = [];
  for (let i = 0; i < hist.length; i += step) pts.push(hist[i]);
  if (pts[pts.length - 1] !== hist[hist.length - 1]) pts.push(hist[hist.length - 1]);
  const t0 = pts[0].ts_ms, t1 = pts[pts.length - 1].ts_ms || t0 + 1;
  let lo = Infinity, hi = -Infinity;
  for (const p of pts) { lo = Math.min(lo, p.nonpaged_bytes); hi = Math.max(hi, p.nonpaged_bytes); }
  if (hi === lo) { hi += 1; lo -= 1; }
  const W = 120, H = 22;
  const xy = pts.map((p) => ((p.ts_ms - t0) / (t1 - t0 || 1) * W).toFixed(1) + ',' +
    (H - 1 - (p.nonpaged_bytes - lo) / (hi - lo) * (H - 2)).toFixed(1)).join(' ');
  const last = pts[pts.length - 1].nonpaged_bytes;
  const title = `nonpaged ${fmtBytes(pts[0].nonpaged_bytes)} → ${fmtBytes(last)}` +
    (limit ? ` (limit ${fmtBytes(limit)})` : '');
  return `<svg class="spark" viewBox="0 0 ${W} ${H}" preserveAspectRatio="none"><title>${esc(title)}</title>` +
    `<polyline points="${xy}"/></svg>`;
}

/* ---- fleet overview ----------------------------------------------------------------------- */

function fleetView() {
  const v = $('#view');
  v.innerHTML = `
    <h1>Fleet</h1>
    <div class="cards" id="cards"></div>
    <h2>Leak suspects</h2>
    <div id="suspects"><span class="mute">loading…</span></div>
    <h2>Hosts <span class="mute">by nonpaged pool pressure</span></h2>
    <div class="toolbar"><input id="host-filter" placeholder="filter hosts" aria-label="filter hosts"></div>
    <table id="hosts"><thead><tr><th>Host</th><th>OS</th><th>Nonpaged used / limit</th>
      <th class="num">%</th><th>ETA to limit</th><th>Nonpaged trend</th><th class="num">Paged %</th>
      <th class="num">Suspects</th><th>Connection</th></tr></thead><tbody></tbody></table>`;
  const sparkCache = new Map(); /* host -> svg */
  let queue = [], active = 0, hostsByName = new Map();
  const io = new IntersectionObserver((entries) => {
    for (const e of entries) if (e.isIntersecting) { io.unobserve(e.target); queue.push(e.target); }
    pump();
  });
  function pump() {
    while (active < SPARK_PARALLEL && queue.length) {
      const cell = queue.shift(), name = cell.dataset.host;
      if (!cell.isConnected) continue;
      active++;
      api('/api/v1/hosts/' + encodeURIComponent(name)).then((h) => {
        const svg = sparkSvg(h.history, h.nonpaged_limit_bytes);
        sparkCache.set(name, svg);
        cell.innerHTML = svg;
      }).catch((e) => { /* (a collector restarting): not a blank cell; asked again at the next refresh */
        if (!sparkCache.has(name)) cell.innerHTML = `<span class="mute" title="${esc('history not available: ' + e.message + '; asked again at the next refresh')}">?</span>`;
      }).finally(() => { active--; pump(); });
    }
  }
  $('#host-filter').addEventListener('input', (e) => {
    const q = e.target.value.toLowerCase();
    for (const tr of $('#hosts tbody').rows) tr.hidden = q !== '' && !tr.dataset.host.toLowerCase().includes(q);
  });

  async function refresh() {
    const hostsP = hostsPrefetch || api('/api/v1/hosts');
    hostsPrefetch = null;
    const leaksP = api('/api/v1/leaks');
    leaksP.catch(() => {});
    const { hosts } = await hostsP;
    performance.mark('poolwatch-hosts-fetched');
    hostsByName = new Map(hosts.map((h) => [h.name, h]));
    /* a host whose history still loads has the level of its newest sample so far (days back in
     * a backfill), not of now: counted as loading, not as critical or warn */
    const n = { ok: 0, warn: 0, critical: 0, loading: 0 };
    for (const h of hosts) {
      if (h.loading_history) n.loading++;
      else if (h.nonpaged_level in n) n[h.nonpaged_level]++;
    }
    $('#cards').innerHTML = `<div class="card"><b>${hosts.length}</b>hosts</div>` +
      `<div class="card"><b>${hosts.filter((h) => h.connected).length}</b>connected</div>` +
      `<div class="card"><b class="${hosts.some((h) => connState(h) === 'silent') ? 'err' : ''}">${hosts.filter((h) => connState(h) === 'silent').length}</b>silent</div>` +
      `<div class="card"><b class="err">${n.critical}</b>critical</div>` +
      `<div class="card"><b>${n.warn}</b>warn</div>` +
      (n.loading ? `<div class="card" id="loading-count" title="${esc(LOADING_TITLE)}"><b class="loading">${n.loading}</b>loading history</div>` : '') +
      `<div class="card" id="suspects-card"><b>${hosts.reduce((a, h) => a + (h.suspects || 0), 0)}</b>leak suspects</div>`;
    const rows = hosts.map((h) => {
      const lvl = h.loading_history ? 'loading' : limitLevel(h.nonpaged_level, h.nonpaged_limit_bytes);
      /* the limit's source beside it (reported, computed, registry, configured), as on the host
       * page: the global view's hosts carry it too */
      const src = h.nonpaged_limit_bytes && h.nonpaged_limit_source && h.nonpaged_limit_source !== 'unknown'
        ? ` <span class="mute src">${esc(h.nonpaged_limit_source)}</span>` : '';
      const used = `${bar(h.nonpaged_ratio, lvl)}${fmtBytes(h.nonpaged_bytes)} / ` +
        limitText(h.nonpaged_limit_bytes) + src;
      const sp = h.suspects || 0;
      return `<tr data-host="${esc(h.name)}" class="lvl-${esc(lvl)}">` +
        `<td class="host">${level(lvl)}${hostLink(h.name, h.collector)}</td>` +
        `<td>${esc(h.os || '')}${h.arch ? ' ' + esc(h.arch) : ''}</td>` +
        `<td class="used" title="${esc(h.nonpaged_limit_detail || '')}">${used}</td>` +
        `<td class="num pct">${limitPct(h.nonpaged_ratio, h.nonpaged_limit_bytes)}</td>` +
        `<td class="eta">${h.loading_history ? '<span class="loading">loading history</span>' : fmtEta(h.nonpaged_eta_ms, h.last_seen_ms, h.nonpaged_ran_out_ms)}</td>` +
        `<td class="spark-cell" data-host="${esc(h.name)}">${sparkCache.get(h.name) || ''}</td>` +
        `<td class="num">${limitPct(h.paged_ratio, h.paged_limit_bytes)}</td>` +
        `<td class="num suspects"><span class="badge${sp ? '' : ' zero'}">${sp}</span></td>` +
        `<td class="conn-cell">${connHtml(h)}</td></tr>`;
    });
    const tb = $('#hosts tbody');
    tb.innerHTML = rows.join('');
    performance.mark('poolwatch-rows-rendered');
    if ($('#host-filter').value) $('#host-filter').dispatchEvent(new Event('input'));
    /* Refresh the sparklines of visible rows too (new points), lazily as rows scroll in. */
    queue = [];
    ready();
    markPainted();
    /* After the first frame: observing a thousand cells costs a layout pass of its own. */
    requestAnimationFrame(() => setTimeout(() => {
      for (const cell of tb.querySelectorAll('td.spark-cell')) io.observe(cell);
    }, 0));
    try {
      const lk = await leaksP, { suspects } = lk;
      const loading = new Set(hosts.filter((h) => h.loading_history).map((h) => h.name));
      if (lk.first_pass_ms && !suspects.length) { /* "not judged yet": no count, no "none" (a
        * restart lists the suspects its last stop kept until then: those are counted) */
        $('#suspects-card').innerHTML = '<b class="pending">—</b>leak suspects: not judged yet';
        for (const b of tb.querySelectorAll('td.suspects .badge')) {
          b.textContent = '—';
          b.title = 'the analysis has not run yet';
        }
      }
      $('#suspects').innerHTML = suspects.length ? suspectTable(suspects.slice(0, 20), true, loading) +
        (suspects.length > 20 ? `<p class="mute">${suspects.length - 20} more</p>` : '')
        : notJudged(lk) || '<span class="mute">none: no tag grows like a leak</span>';
    } catch (e) {
      $('#suspects').innerHTML = `<span class="err">${esc(e.message)}</span>`;
    }
  }
  return { refresh };
}

/* First paint of the fleet (tests/bench read it): after the rows are in the DOM, two frames. */
let painted = false;
function markPainted() {
  if (painted) return;
  painted = true;
  requestAnimationFrame(() => requestAnimationFrame(() => {
    performance.mark('poolwatch-fleet-painted');
    window.poolwatchFirstPaintMs = performance.now();
  }));
}

/* A row's pool type; a session's session-pool row says which session ("session 2"). */
function typeText(r) {
  return r.type === 'session' && typeof r.session === 'number' ? `session ${r.session}` : r.type;
}

/* A suspect's pool: its limit and where the limit comes from, its level and when it runs out
 * (the list is in that order of urgency: the server's). */
function suspectLimit(s) {
  if (!s.pool_limit_bytes) return limitText(null);
  return `${level(s.pool_level)}${fmtBytes(s.pool_limit_bytes)} <span class="mute src">${esc(s.pool_limit_source || '')}</span>`;
}

/* A suspect's latest big-pool snapshot (its agent's answer when it became a suspect, or to
 * `poolwatch bigpool`): a few large blocks or many small allocations. */
function bigPoolHtml(bp) {
  if (!bp) return '<span class="mute">—</span>';
  const when = `taken ${fmtTime(bp.taken_ms)}, asked by the ${bp.asked_by || 'operator'}; ` +
    `${bp.scanned} big-pool blocks of every tag`;
  if (!bp.count) return `<span class="bp-none" title="${esc(when)}">no block of a page or more</span>`;
  const hist = (bp.size_hist || []).map((c, i) => c ? `${i ? fmtBytes(2 ** (12 + i)) : '0'}+: ${c}` : '')
    .filter(Boolean).join(', ');
  return `<span class="bp" title="${esc(when + (hist ? '; sizes ' + hist : ''))}">` +
    `<b class="bp-count">${bp.count}</b> blocks, <span class="bp-bytes">${fmtBytes(bp.bytes)}</span>` +
    ` <span class="mute">(largest ${fmtBytes(bp.largest_bytes)})</span></span>`;
}

/* When a suspect's pool runs out: the pool's trend, or (too few points for it: an import of
 * 2-3 screens) the leak's growth alone with its range, or none; the API's note says which, or
 * why there is none. */
function suspectEta(s) {
  const last = s.last_sample_ms; /* the ETA's base: the host's newest sample */
  const when = `<span class="eta-when">${fmtEta(s.pool_eta_ms, last, s.pool_ran_out_ms)}</span>`;
  if (!s.pool_eta_note || s.pool_eta_basis === 'pool') return when;
  const r = s.pool_eta_range_ms || [];
  const span = (t) => fmtTime(t) + (etaRel(t, last) ? ' ' + etaRel(t, last) : '');
  const range = s.pool_eta_basis === 'leak' && r[0] != null && r[0] !== r[1]
    ? ` (between ${span(r[0])} and ${r[1] == null ? 'never' : span(r[1])})` : '';
  return `${when}<div class="mute eta-note">${esc(s.pool_eta_note)}${esc(range)}</div>`;
}

/* loading: names of hosts whose history is still loading (their ETA is of an old time). */
function suspectTable(list, withHost, loading = new Set()) {
  return `<table class="suspects"><thead><tr>${withHost ? '<th>Host</th>' : ''}<th>Tag</th><th>Pool</th>` +
    '<th class="num">Growth / h</th><th class="num">Now</th><th class="lim">Limit (source)</th><th class="eta">Runs out</th>' +
    '<th class="num">Score</th><th>Driver</th><th>Evidence</th>' +
    (withHost ? '' : '<th title="the tag\'s large blocks (SystemBigPoolInformation), asked when it became a suspect">Big pool</th>') +
    '<th>History</th></tr></thead><tbody>' +
    list.map((s) => `<tr data-host="${esc(s.host)}" data-tag="${esc(s.tag)}">` +
      (withHost ? `<td>${hostLink(s.host)}</td>` : '') +
      `<td class="tag">${tagLink(s.tag)}</td><td>${esc(typeText(s))}</td>` +
      `<td class="num">${fmtBytes(Math.round(s.growth_bytes_per_h))}</td>` +
      `<td class="num">${fmtBytes(s.current_bytes)}</td>` +
      `<td class="lim">${suspectLimit(s)}</td>` +
      `<td class="eta">${loading.has(s.host) ? '<span class="loading">loading history</span>' : suspectEta(s)}</td>` +
      `<td class="num">${(s.score ?? 0).toFixed(2)}</td>` +
      `<td>${esc(s.driver || '')}${s.description ? ' <span class="mute">' + esc(s.description) + '</span>' : ''}</td>` +
      `<td class="evidence">${esc(s.evidence || '')}` +
        (typeof s.confidence === 'number' ? ` <span class="mute">(confidence ${s.confidence.toFixed(2)}${s.method === 'compare' ? ', screens compared only' : ''})</span>` : '') +
        `${s.finding && s.finding.with ? ' <span class="mute">' +
        (s.finding.head ? 'grew with ' : 'with ') + esc(s.finding.with) + '</span>' : ''}</td>` +
      (withHost ? '' : `<td class="bigpool">${bigPoolHtml(s.big_pool)}</td>`) +
      `<td class="hist"><a class="hist-link" href="${hostHref(s.host, { tag: s.tag, pool: s.type })}">chart</a></td></tr>`).join('') +
    '</tbody></table>';
}

/* The engine's word on the charted tag (/api/v1/leaks): verdict, rate, confidence, since, the
 * evidence sentence. Only leaks are listed: any other tag says so. */
function verdictHtml(s, ser, lk) {
  if (!s) {
    if (lk.first_pass_ms) return `<span class="mute">analysis has not run yet (first pass at ${fmtClock(lk.first_pass_ms)})</span>`;
    return `<span class="mute">not a leak suspect: the analysis does not judge ${esc(ser.tag)} (${esc(ser.pool)}) on this host a leak</span>`;
  }
  const iv = s.growth_interval_bytes_per_h;
  return `<b class="verdict-word ${esc(s.verdict || 'leak')}">${esc(s.verdict || 'leak')}</b> ` +
    `<span class="rate">${fmtBytes(Math.round(s.growth_bytes_per_h))}/h</span>` +
    (iv && iv[0] !== iv[1] ? ` <span class="mute">(90 % interval ${fmtBytes(Math.round(iv[0]))} – ${fmtBytes(Math.round(iv[1]))}/h)</span>` : '') +
    `, confidence <span class="confidence">${(s.confidence ?? 0).toFixed(2)}</span>` +
    (s.method === 'compare' ? ' <span class="mute">(screens compared only)</span>' : '') +
    `, since <span class="since">${s.since_ms ? fmtTime(s.since_ms) : '—'}</span>` +
    `<div class="evidence">${esc(s.evidence || '')}</div>`;
}

/* ---- host page ---------------------------------------------------------------------------- */

const POOL_COLS = [ /* [key, header, numeric, has change column] */
  ['tag', 'Tag', false, false], ['type', 'Type', false, false], ['allocs', 'Allocs', true, true],
  ['frees', 'Frees', true, true], ['diff', 'Diff', true, true], ['bytes', 'Bytes', true, true],
  ['per_alloc', 'Per Alloc', true, false]];
/* Linux hosts: what each slab cache holds (num_slabs × pagesperslab × page size, slabtop's
 * CACHE SIZE) after what its objects use (Bytes). The API gives null held_bytes elsewhere. */
const POOL_COLS_HELD = [...POOL_COLS.slice(0, 6), ['held_bytes', 'Held', true, true], POOL_COLS[6]];
const HELD_TITLE = 'bytes the slab cache holds: num_slabs × pagesperslab × page size (slabtop CACHE SIZE); Bytes is what its objects use';

function hostView(name, params) {
  /* The tag charted under "Tag history": from the URL, else the host's first suspect, else
   * the table's largest row. */
  const hist = { tag: params.tag || '', pool: params.pool || 'nonpaged',
                 range: RANGES[params.range] ? params.range : '24h' };
  /* The pool chart: its pool (`totals`), the page's range (both charts), and the host document
   * its limit comes from. Both are in the URL: a host page with its range is a link. */
  const pc = { range: hist.range, pool: params.totals === 'paged' ? 'paged' : 'nonpaged', host: null, seq: 0 };
  const st = { sort: 'bytes', order: 'desc', by_change: false, pool: 'both', include: '', exclude: '',
               changes: true, session: '' };
  const v = $('#view');
  v.innerHTML = `
    <h1>${level('')}<span id="host-name">${esc(name)}</span> <span class="mute" id="host-os"></span> <span id="host-conn"></span></h1>
    <div class="cards" id="host-cards"></div>
    <div class="cols">
      <div><h2><span id="np-title">Nonpaged</span> pool used vs limit <span class="mute" id="np-note"></span></h2>
        <div class="toolbar" id="np-tools"><span id="np-ranges"></span> <span class="ranges" role="group" aria-label="pool">
          <button type="button" data-pool="nonpaged" class="on">nonpaged</button><button type="button" data-pool="paged">paged</button></span>
          <span class="mute" id="np-points"></span></div>
        <div class="chart" id="np-chart"></div></div>
      <div><h2>Top growing tags <span class="mute">(leak suspects)</span></h2><div id="host-suspects"></div></div>
    </div>
    <h2>Pool events <span class="mute">(System log: srv 2019/2020 the pool was empty, 2004 low virtual memory)</span></h2>
    <div id="host-events"></div>
    <h2 id="hist">Tag history <span class="tagtxt" id="hist-name"></span></h2>
    <form class="toolbar" id="hist-form" autocomplete="off">
      <label>Tag <input id="hist-tag" maxlength="64" title="a tag of this host, e.g. NtFC"></label>
      <label>Pool <select id="hist-pool"><option value="nonpaged">nonpaged</option><option value="paged">paged</option>
        <option value="session">session</option></select></label>
      <span id="hist-ranges"></span>
      <span class="mute" id="hist-note"></span>
    </form>
    <div id="verdict" class="verdict"></div>
    <div class="pair">
      <div><h3>Bytes <span class="mute">(dashed: the leak fit)</span></h3><div class="chart" id="tag-bytes"></div></div>
      <div><h3>Outstanding allocations <span class="mute">(allocs − frees)</span></h3><div class="chart" id="tag-diff"></div></div>
    </div>
    <h2>Pool table</h2>
    <div class="toolbar">
      <label>Include <input id="include" placeholder="e.g. Drs*,Ntf?" title="tags to show: * and ?, comma separated"></label>
      <label>Exclude <input id="exclude" placeholder="e.g. Mm*" title="tags to hide: * and ?"></label>
      <label>Pool <select id="pool-sel"><option value="both">both</option><option value="nonpaged">nonpaged</option>
        <option value="paged">paged</option><option value="session">session</option></select></label>
      <label>Session <select id="sess-sel" title="session pools of one Remote Desktop session (poolmon /sN)"><option value="">every row</option>
        <option value="all">all sessions</option></select></label>
      <label><input type="checkbox" id="changes" checked> change columns</label>
      <label><input type="checkbox" id="by-change"> sort by change</label>
      <span class="mute" id="pool-count"></span>
    </div>
    <table id="pool"><thead><tr></tr></thead><tbody></tbody></table>`;
  let chart = null, bytesChart = null, diffChart = null, histSeq = 0, scrolled = false;
  let cols = POOL_COLS; /* POOL_COLS_HELD while the table's rows carry held bytes */
  let events = []; /* the host's pool events (the last 30 days), refreshed with the page */
  $('#np-tools').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-range], button[data-pool]');
    if (!b) return;
    if (b.dataset.range) go({ range: b.dataset.range });
    else go({ totals: b.dataset.pool });
  });

  /* A pool's used bytes over the range from the store's totals buckets (GET /totals: 1-min
   * buckets for 6 h and 24 h, 15-min ones for 7 d and 30 d), with the limit each step's last
   * sample carried (else the host's current one) when it fits a readable scale. */
  async function drawTotals() {
    const seq = ++pc.seq, r = RANGES[pc.range], pool = pc.pool, h = pc.host || {};
    $('#np-ranges').innerHTML = rangeButtons(pc.range);
    for (const b of document.querySelectorAll('#np-tools button[data-pool]')) b.classList.toggle('on', b.dataset.pool === pool);
    $('#np-title').textContent = pool === 'paged' ? 'Paged' : 'Nonpaged';
    const to = Date.now();
    const q = `/api/v1/hosts/${encodeURIComponent(name)}/totals?` +
      new URLSearchParams({ from: Math.floor(to - r.ms), to, step: r.step });
    const t = await api(q);
    if (seq !== pc.seq) return;
    const el = $('#np-chart');
    const pts = t.points;
    if (!pts.length) {
      if (chart) chart.destroy();
      chart = null;
      el.innerHTML = `<span class="mute">no samples in the last ${r.label}</span>`;
      el.chartData = { xs: [], series: {} };
      el.dataset.query = q;
      $('#np-note').textContent = '';
      $('#np-points').textContent = '';
      return;
    }
    const xs = pts.map((p) => p.ts_ms), used = pts.map((p) => p[pool + '_bytes']);
    const hostLim = pool === 'paged' ? h.paged_limit_bytes : h.nonpaged_limit_bytes;
    const lims = pts.map((p) => p[pool + '_limit_bytes'] ?? hostLim ?? null);
    const series = [{ label: pool + ' used', values: used, color: '#1f4e79' }];
    /* The limit is drawn when it fits a readable scale, labelled with its value and where it
     * comes from (the API's *_limit_source: agent, config, computed from the OS, import); far
     * above, the used curve would be a flat line at the bottom, so the limit is named instead. */
    const lim = Math.max(0, ...lims.filter((v) => v != null)), top = Math.max(...used);
    const src = (pool === 'paged' ? h.paged_limit_source : h.nonpaged_limit_source) || '';
    const detail = pool === 'paged' ? '' : h.nonpaged_limit_detail || '';
    const lastLim = lims.filter((v) => v != null).pop() ?? null;
    const limText = `limit ${fmtBytes(lastLim || lim)}` + (src && src !== 'unknown' ? ` (${src})` : '');
    let lineLabel = null;
    if (lim && top >= lim / 4) {
      series.push({ key: 'limit', label: limText, values: lims, color: '#c62828', dash: [6, 4] });
      lineLabel = { text: limText, color: '#c62828', value: () => lastLim };
    }
    $('#np-note').textContent = !lim ? '(limit unknown)'
      : (top >= lim / 4 ? '' : `(${limText} is off this scale: ${fmtPct(top / lim)} at most)`) +
        (detail ? ` ${detail}` : '');
    $('#np-points').textContent = pointsNote(xs, t.level, t.step_ms);
    if (chart) chart.destroy();
    chart = await lineChart(el, xs, series, { maxWidth: 640, height: 220, zero: true, marks: eventMarks(events), lineLabel });
    el.dataset.query = q; /* what is drawn (the tests ask the API the same) */
  }

  /* The page's state is its URL: tag and pool of the tag history, range (both charts), totals
   * (the pool chart's pool, when paged). */
  function go(p) {
    const q = { ...(hist.tag ? { tag: hist.tag, pool: hist.pool } : {}), range: hist.range,
      ...(pc.pool === 'paged' ? { totals: 'paged' } : {}), ...p };
    if (q.totals === 'nonpaged') delete q.totals;
    location.hash = hostHref(name, q);
  }
  $('#hist-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const t = $('#hist-tag').value;
    if (t.trim()) go({ tag: t });
  });
  $('#hist-pool').addEventListener('change', (e) => go({ pool: e.target.value }));
  $('#hist-ranges').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-range]');
    if (b) go({ range: b.dataset.range });
  });

  /* The chosen tag's bytes and outstanding allocations over the range, with the engine's
   * verdict on it when it is a suspect. */
  async function drawHistory() {
    const seq = ++histSeq;
    $('#hist-ranges').innerHTML = rangeButtons(hist.range);
    $('#hist-pool').value = hist.pool;
    $('#hist-tag').value = hist.tag;
    $('#hist-name').textContent = hist.tag;
    if (!hist.tag) {
      $('#hist-note').textContent = 'pick a tag: "chart" in the table or the suspects';
      return;
    }
    const q = seriesQuery(name, hist.tag, hist.pool, hist.range);
    const [ser, lk] = await Promise.all([api(q),
      api('/api/v1/leaks?host=' + encodeURIComponent(name)).catch(() => ({ suspects: [] }))]);
    if (seq !== histSeq) return;
    const pts = ser.points, r = RANGES[hist.range];
    const s = lk.suspects.find((x) => x.host === name && x.tag === ser.tag && x.type === ser.pool);
    $('#verdict').innerHTML = verdictHtml(s, ser, lk);
    $('#tag-bytes').dataset.query = $('#tag-diff').dataset.query = q;
    if (!pts.length) {
      $('#hist-note').textContent = '';
      for (const id of ['#tag-bytes', '#tag-diff']) {
        $(id).innerHTML = `<span class="mute">no ${esc(ser.pool)} samples of ${esc(ser.tag)} in the last ${r.label}</span>`;
        $(id).chartData = { xs: [], series: {} };
      }
      ready();
      return;
    }
    const xs = pts.map((p) => p.ts_ms), ys = pts.map((p) => p.bytes);
    $('#hist-note').textContent = pointsNote(xs, ser.level, r.step) +
      `, ${fmtTime(pts[0].ts_ms)} – ${fmtTime(pts[pts.length - 1].ts_ms)}`;
    const bs = [{ label: 'bytes', values: ys, color: PALETTE[0] }];
    const fit = s ? fitLine(xs, ys, s, r.step) : null;
    if (fit) bs.push({ label: 'leak fit', values: fit, color: PALETTE[1], dash: [6, 4], points: false });
    if (bytesChart) bytesChart.destroy();
    if (diffChart) diffChart.destroy();
    const marks = eventMarks(events, ser.tag, ser.pool);
    bytesChart = await lineChart($('#tag-bytes'), xs, bs, { height: 230, zero: true, marks });
    diffChart = await lineChart($('#tag-diff'), xs, [{ label: 'outstanding', values: pts.map((p) => p.diff), color: PALETTE[2] }],
      { height: 230, zero: true, yfmt: fmtCount, marks });
    ready();
  }

  /* The URL changed on this host's page: redraw what it changed. A new tag (or the same link
   * again) redraws the tag history and scrolls to it; a range both charts; a pool the pool
   * chart. */
  async function route(p) {
    const tag = p.tag || hist.tag, pool = p.pool || hist.pool;
    const range = RANGES[p.range] ? p.range : hist.range, totals = p.totals === 'paged' ? 'paged' : 'nonpaged';
    const tagMoved = tag !== hist.tag || pool !== hist.pool, rangeMoved = range !== hist.range;
    const totMoved = totals !== pc.pool;
    hist.tag = tag;
    hist.pool = pool;
    hist.range = pc.range = range;
    pc.pool = totals;
    const jobs = [];
    if (rangeMoved || totMoved) jobs.push(drawTotals());
    if (tagMoved || rangeMoved || !totMoved) jobs.push(drawHistory());
    await Promise.all(jobs);
    if (tagMoved || (!rangeMoved && !totMoved)) $('#hist').scrollIntoView({ block: 'start' });
  }

  function header() {
    const cells = [];
    for (const [k, label, num, chg] of cols) {
      const cls = [num ? 'num' : '', st.sort === k ? 'sorted' : '', st.sort === k && st.order === 'asc' ? 'asc' : '']
        .filter(Boolean).join(' ');
      const sortable = k === 'type' ? '' : ` data-sort="${k}"`; /* the API sorts by these */
      const title = k === 'held_bytes' ? ` title="${HELD_TITLE}"` : '';
      cells.push(`<th${sortable} data-col="${k}" class="${cls}"${title}>${label}</th>`);
      if (chg) cells.push(`<th class="num chg">Δ</th>`);
    }
    cells.push('<th>Driver / description</th><th>History</th>');
    $('#pool thead tr').innerHTML = cells.join('');
  }
  $('#pool thead').addEventListener('click', (e) => {
    const th = e.target.closest('th[data-sort]');
    if (!th) return;
    const k = th.dataset.sort;
    if (st.sort === k) st.order = st.order === 'desc' ? 'asc' : 'desc';
    else { st.sort = k; st.order = k === 'tag' ? 'asc' : 'desc'; }
    loadPool();
  });
  let deb = null;
  for (const id of ['include', 'exclude']) {
    $('#' + id).addEventListener('input', (e) => {
      st[id] = e.target.value.trim();
      clearTimeout(deb);
      deb = setTimeout(loadPool, 200);
    });
  }
  $('#pool-sel').addEventListener('change', (e) => { st.pool = e.target.value; loadPool(); });
  $('#sess-sel').addEventListener('change', (e) => { st.session = e.target.value; loadPool(); });
  const seenSessions = new Set();
  /* The session selector lists the sessions seen in tables of every session. */
  function noteSessions(rows) {
    if (st.session !== '' && st.session !== 'all') return;
    let added = false;
    for (const r of rows) {
      if (typeof r.session === 'number' && !seenSessions.has(r.session)) { seenSessions.add(r.session); added = true; }
    }
    if (!added) return;
    const sel = $('#sess-sel');
    for (const n of [...seenSessions].sort((a, b) => a - b)) {
      if (!sel.querySelector(`option[value="${n}"]`)) {
        const o = document.createElement('option');
        o.value = String(n);
        o.textContent = `session ${n}`;
        sel.appendChild(o);
      }
    }
  }
  $('#by-change').addEventListener('change', (e) => { st.by_change = e.target.checked; loadPool(); });
  $('#changes').addEventListener('change', (e) => {
    st.changes = e.target.checked;
    $('#pool').classList.toggle('hidecols', !st.changes);
  });

  let poolSeq = 0;
  async function loadPool() {
    const seq = ++poolSeq;
    const q = new URLSearchParams({ sort: st.sort, order: st.order, by_change: st.by_change ? 1 : 0, pool: st.pool });
    if (st.session !== '') q.set('session', st.session);
    if (st.include) q.set('include', st.include.replace(/\s*,\s*/g, ','));
    if (st.exclude) q.set('exclude', st.exclude.replace(/\s*,\s*/g, ','));
    document.body.dataset.state = 'loading';
    let t;
    try {
      t = await api(`/api/v1/hosts/${encodeURIComponent(name)}/pool?${q}`);
    } catch (e) {
      if (seq !== poolSeq) return;
      $('#pool tbody').innerHTML = `<tr><td colspan="12" class="err">${esc(e.message)}</td></tr>`;
      $('#pool-count').textContent = '';
      ready();
      if (e instanceof AuthError) throw e;
      return;
    }
    if (seq !== poolSeq) return; /* a newer request is on its way */
    if (!hist.tag && t.rows.length) {
      hist.tag = t.rows[0].tag;
      hist.pool = t.rows[0].type;
      drawHistory().catch((e) => status(e.message, true));
    }
    cols = t.rows.some((r) => r.held_bytes !== null && r.held_bytes !== undefined) ? POOL_COLS_HELD : POOL_COLS;
    header();
    $('#pool tbody').innerHTML = t.rows.map((r) => {
      const cells = [];
      for (const [k, , num, chg] of cols) {
        const val = k === 'tag' ? tagLink(r.tag) : k === 'type' ? esc(typeText(r)) : esc(r[k]);
        cells.push(`<td class="${k}${num ? ' num' : ''}">${val}</td>`);
        if (chg) cells.push(`<td class="${k}_change num ${chgClass(r[k + '_change'])}">${esc(fmtChg(r[k + '_change']))}</td>`);
      }
      cells.push(`<td class="driver">${esc(r.driver || '')}${r.description ? ' <span class="mute">' + esc(r.description) + '</span>' : ''}</td>`);
      cells.push(`<td class="hist"><a class="hist-link" href="${hostHref(name, { tag: r.tag, pool: r.type, range: hist.range })}">chart</a></td>`);
      return `<tr data-tag="${esc(r.tag)}" data-type="${esc(r.type)}"${typeof r.session === 'number' ? ` data-session="${r.session}"` : ''}>${cells.join('')}</tr>`;
    }).join('');
    noteSessions(t.rows);
    $('#pool-count').textContent = `${t.total_rows} rows` + (t.count < t.total_rows ? ` (${t.count} shown)` : '') +
      (t.timestamp_ms ? `, sample of ${fmtTime(t.timestamp_ms)}` : '') +
      (t.prev_timestamp_ms ? ` (changes since ${fmtTime(t.prev_timestamp_ms)})` : '');
    ready();
  }

  async function refresh() {
    const evq = `/api/v1/hosts/${encodeURIComponent(name)}/events?from=${Math.floor(Date.now() - 30 * 86400e3)}`;
    const [h, leaks, ev] = await Promise.all([api('/api/v1/hosts/' + encodeURIComponent(name)),
      api('/api/v1/leaks').catch(() => ({ suspects: [] })), api(evq).catch(() => ({ events: [] }))]);
    events = ev.events || [];
    $('#host-events').innerHTML = events.length ? '<table id="events"><thead><tr><th>Time</th><th>Event</th><th>Pool</th>' +
      '<th>Tags named</th></tr></thead><tbody>' + events.slice().reverse().map((e) =>
      `<tr class="${e.kind === 'low_virtual_memory' ? 'warn' : 'crit'}"><td>${esc(fmtTime(e.ts_ms))}</td>` +
      `<td>${esc(e.provider)} ${e.event_id}: ${esc(e.message)}</td><td>${esc(e.pool || '—')}</td>` +
      `<td>${e.tags.map((t) => `<a class="tagtxt" href="${hostHref(name, { tag: t.tag, pool: t.pool, range: hist.range })}">${esc(t.tag)}</a>` +
        ` <span class="mute">${esc(t.pool)}${t.bytes ? ' ' + fmtBytes(t.bytes) : ''}</span>`).join(', ') || '—'}</td></tr>`).join('') +
      '</tbody></table>' : '<span class="mute">none in the last 30 days</span>';
    $('h1 .lvl').className = 'lvl ' + (h.loading_history ? 'loading' : limitLevel(h.nonpaged_level, h.nonpaged_limit_bytes) || 'unknown');
    $('#host-os').textContent = [h.os, h.arch].filter(Boolean).join(' · ');
    $('#host-conn').innerHTML = connHtml(h);
    const tot = h.totals || {};
    $('#host-cards').innerHTML = (h.loading_history ? `<div class="card loading-card" id="loading-card" title="${esc(LOADING_TITLE)}">` +
      `<b>loading history</b>newest sample so far ${esc(fmtTime(h.last_seen_ms))}, ${esc(fmtDur(Date.now() - h.last_seen_ms))} behind:` +
      ' level, ETA and suspects are of that time</div>' : '') +
      `<div class="card"><b>${limitPct(h.nonpaged_ratio, h.nonpaged_limit_bytes)}</b>nonpaged ${fmtBytes(h.nonpaged_bytes)} / ${limitText(h.nonpaged_limit_bytes)}</div>` +
      `<div class="card" id="eta-card"><b>${h.loading_history ? '<span class="loading">loading</span>' : fmtEta(h.nonpaged_eta_ms, h.last_seen_ms, h.nonpaged_ran_out_ms)}</b>nonpaged ETA to limit` +
      /* how it is known when it is not the pool's own trend: a leak's growth alone over 2-3
       * screens says "low confidence"; none yet before the analysis judged the host */
      (!h.loading_history && h.nonpaged_eta_note && (h.nonpaged_eta_basis === 'leak' || h.nonpaged_eta_basis == null)
        ? `<div class="mute eta-note">${esc(h.nonpaged_eta_note)}</div>` : '') + '</div>' +
      `<div class="card"><b>${limitPct(h.paged_ratio, h.paged_limit_bytes)}</b>paged ${fmtBytes(h.paged_bytes)} / ${limitText(h.paged_limit_bytes)}</div>` +
      /* 0 is "not in the samples" (a slabinfo import has no memory line): unknown, not 0 B */
      (tot.physical_memory_bytes ? `<div class="card"><b>${fmtBytes(tot.physical_memory_bytes)}</b>memory, ` +
        `${tot.available_bytes ? fmtBytes(tot.available_bytes) + ' available' : 'available unknown'}</div>`
        : '<div class="card"><b>—</b>memory unknown (not in the samples)</div>') +
      `<div class="card"><b>${h.samples ?? 0}</b>samples, last ${fmtAgo(h.last_seen_ms)}</div>` +
      /* the agent's own footprint (AgentFootprint fires when it grows) */
      (tot.agent ? `<div class="card" id="agent-card"><b>${fmtBytes(tot.agent.rss_bytes)}</b>poolwatch agent, ` +
        `CPU ${(tot.agent.cpu_ms / 1000).toFixed(1)} s` +
        (tot.agent.handles ? `, ${tot.agent.handles} handles` : '') + '</div>' : '');
    const mine = leaks.suspects.filter((s) => s.host === name);
    $('#host-suspects').innerHTML = mine.length
      ? suspectTable(mine, false, new Set(h.loading_history ? [name] : [])) : notJudged(leaks) || '<span class="mute">none</span>';
    if (!hist.tag && mine.length) {
      hist.tag = mine[0].tag;
      hist.pool = mine[0].type;
    }
    pc.host = h;
    await Promise.all([drawTotals(), loadPool(), hist.tag ? drawHistory() : null]);
    if (params.tag && !scrolled) $('#hist').scrollIntoView({ block: 'start' });
    scrolled = true;
  }
  return { refresh, route };
}

/* ---- tag page ----------------------------------------------------------------------------- */

const TAG_TOP_HOSTS = 6; /* hosts charted on a tag's page: the largest for the pool shown */

function tagView(tag, params) {
  let range = RANGES[params.range] ? params.range : '24h';
  const v = $('#view');
  v.innerHTML = `
    <h1>Tag <span class="tagtxt" id="tag-name">${esc(tag)}</span> <span class="mute" id="tag-desc"></span></h1>
    <div class="toolbar"><label>Pool <select id="tag-pool"><option value="nonpaged">nonpaged</option>
      <option value="paged">paged</option><option value="both">both</option></select></label>
      <span class="mute" id="tag-pool-note"></span></div>
    <div class="cards" id="tag-cards"></div>
    <div class="cols">
      <div class="wide"><h2>Over time on its top hosts <span class="mute" id="trend-note"></span></h2>
        <div class="toolbar" id="tag-ranges"></div><div class="chart" id="trend"></div></div>
    </div>
    <h2>Leak suspects</h2><div id="tag-suspects"></div>
    <h2>Hosts <span class="mute">(outliers by robust z-score flagged)</span></h2>
    <table id="tag-hosts"><thead><tr><th>Host</th><th>Pool</th><th class="num">Bytes</th><th class="num">Diff</th>
      <th class="num">Robust z</th><th>Outlier</th><th class="num">OS build</th></tr></thead><tbody></tbody></table>`;
  let chart = null, trendSeq = 0;
  $('#tag-ranges').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-range]');
    if (b) location.hash = '#/tag/' + encodeURIComponent(tag) + '?range=' + b.dataset.range;
  });
  /* The tag's bytes on its largest hosts, one line each named by host, over the range. The
   * store aligns steps on the epoch, so the hosts' points share their times. */
  async function drawTrend(hosts) {
    const seq = ++trendSeq, r = RANGES[range];
    $('#tag-ranges').innerHTML = rangeButtons(range);
    const top = hosts.slice(0, TAG_TOP_HOSTS);
    if (!top.length) {
      $('#trend').innerHTML = '<span class="mute">no host has this tag</span>';
      $('#trend').chartData = { xs: [], series: {} };
      return;
    }
    const queries = top.map((h) => seriesQuery(h.host, tag, h.type, range));
    const sers = await Promise.all(queries.map((q) => api(q)));
    if (seq !== trendSeq) return;
    const xs = [...new Set(sers.flatMap((x) => x.points.map((p) => p.ts_ms)))].sort((a, b) => a - b);
    const at = new Map(xs.map((x, i) => [x, i]));
    const both = new Set(top.map((h) => h.type)).size > 1;
    const series = sers.map((x, k) => {
      const vals = xs.map(() => null);
      for (const p of x.points) vals[at.get(p.ts_ms)] = p.bytes;
      return { label: top[k].host + (both ? ` (${top[k].type})` : ''), values: vals, color: PALETTE[k % PALETTE.length] };
    });
    $('#trend-note').textContent = `(${top.length} of ${hosts.length} hosts, the last ${r.label})`;
    $('#trend').dataset.queries = JSON.stringify(queries);
    if (chart) chart.destroy();
    chart = xs.length ? await lineChart($('#trend'), xs, series, { height: 260, zero: true, maxWidth: 1400 }) : null;
    if (!xs.length) {
      $('#trend').innerHTML = `<span class="mute">no samples in the last ${r.label}</span>`;
      $('#trend').chartData = { xs: [], series: {} };
    }
  }
  /* One pool type at a time, as poolmon shows a tag: a tag's paged and nonpaged allocations
   * are different allocations, and mixing them skews the median, p90 and outliers. The first
   * view shows the type holding more bytes across the fleet. */
  let pool = null;
  $('#tag-pool').addEventListener('change', (e) => { pool = e.target.value; refresh(); });
  async function refresh() {
    const base = '/api/v1/tags/' + encodeURIComponent(tag);
    /* only for first_pass_ms: before the first pass the tag's suspects are not judged yet */
    const lkP = api('/api/v1/leaks?limit=1').catch(() => null);
    let t = await api(base);
    if (pool === null) {
      const sum = { paged: 0, nonpaged: 0 };
      for (const h of t.hosts || []) if (h.type in sum) sum[h.type] += Number(h.bytes) || 0;
      pool = sum.paged > sum.nonpaged ? 'paged' : 'nonpaged';
      $('#tag-pool').value = pool;
      const both = (t.hosts || []).some((h) => h.type === 'paged') && (t.hosts || []).some((h) => h.type === 'nonpaged');
      $('#tag-pool-note').textContent = both ? 'this tag is in both pools' : '';
    }
    if (pool !== 'both') t = await api(`${base}?type=${pool}`);
    $('#tag-desc').textContent = [t.driver, t.description].filter(Boolean).join(' — ');
    const hosts = (t.hosts || []).slice().sort((a, b) => b.bytes - a.bytes);
    const outliers = hosts.filter((h) => h.outlier).length;
    $('#tag-cards').innerHTML =
      `<div class="card"><b>${hosts.length}</b>hosts</div>` +
      `<div class="card"><b>${fmtBytes(t.bytes_total)}</b>total</div>` +
      `<div class="card"><b>${fmtBytes(t.bytes_p50)}</b>median</div>` +
      `<div class="card"><b>${fmtBytes(t.bytes_p90)}</b>p90</div>` +
      `<div class="card"><b>${fmtBytes(t.bytes_max)}</b>max</div>` +
      `<div class="card"><b class="${outliers ? 'err' : ''}">${outliers}</b>outliers</div>`;
    $('#tag-hosts tbody').innerHTML = hosts.map((h) =>
      `<tr data-host="${esc(h.host)}" class="${h.outlier ? 'outlier' : ''}"><td>${hostLink(h.host)}</td><td>${esc(h.type)}</td>` +
      `<td class="num" title="${esc(h.bytes)} B">${fmtBytes(h.bytes)}</td><td class="num">${esc(h.diff)}</td>` +
      `<td class="num">${h.robust_z == null ? '—' : Number(h.robust_z).toFixed(2)}</td>` +
      `<td>${h.outlier ? '<span class="badge">outlier</span>' : ''}</td><td class="num">${esc(h.os_build ?? '')}</td></tr>`).join('');
    const sus = t.suspects || [];
    $('#tag-suspects').innerHTML = sus.length ? suspectTable(sus, true) : notJudged(await lkP) || '<span class="mute">none</span>';
    await drawTrend(hosts);
    ready();
  }
  async function route(p) {
    range = RANGES[p.range] ? p.range : range;
    await refresh();
  }
  return { refresh, route };
}

/* ---- not found ---------------------------------------------------------------------------- */

function notFoundView(what) {
  $('#view').innerHTML = `<h1>Not found</h1><p>The dashboard has no page <code>#/${esc(what)}</code>.
    Its pages: <a href="#/">the fleet</a>, <code>#/host/NAME</code> (a host), <code>#/tag/TAG</code> (a tag).</p>`;
  return { refresh: async () => ready() };
}

/* ---- start -------------------------------------------------------------------------------- */

document.addEventListener('DOMContentLoaded', () => {
  $('#login').addEventListener('submit', (e) => {
    e.preventDefault();
    const t = $('#token').value.trim();
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    $('#token').value = '';
    navigate();
  });
  $('#logout').addEventListener('click', () => { sessionStorage.removeItem(TOKEN_KEY); navigate(); });
  $('#tag-go').addEventListener('submit', (e) => {
    e.preventDefault();
    const t = $('#tag-q').value;
    if (t.trim()) location.hash = '#/tag/' + encodeURIComponent(t);
  });
  addEventListener('hashchange', navigate);
  /* Charts are drawn to their column's width: a resized window redraws the page. */
  let resizeTimer = null;
  addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (current) run(current.refresh); }, 250);
  });
  navigate();
});
