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

(function takeFragmentToken() {
  const m = /^#token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.search + '#/');
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
    throw new Error(`${r.status} ${msg}`);
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
function fmtEta(eta) { return eta == null ? '—' : 'in ' + fmtDur(eta - Date.now()); }
function fmtAgo(ms) { return ms ? fmtDur(Date.now() - ms) + ' ago' : '—'; }
function fmtChg(v) { return v == null ? '' : v > 0 ? '+' + v : String(v); }
function chgClass(v) { return v > 0 ? 'chg up' : v < 0 ? 'chg down' : 'chg'; }
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

function routeOf() {
  const h = location.hash.replace(/^#\/?/, '');
  const [view, ...rest] = h.split('/');
  const arg = rest.length ? decodeURIComponent(rest.join('/')) : '';
  if (view === 'host' && arg) return { view: 'host', arg };
  if (view === 'tag' && arg) return { view: 'tag', arg };
  return { view: 'fleet', arg: '' };
}

let current = null; /* { view, arg, refresh() } */
let timer = null;

function showLogin(msg) {
  $('#login').hidden = false;
  $('#login-msg').textContent = msg || '';
  $('#logout').hidden = true;
  $('#view').innerHTML = '';
  $('#token').focus();
}

async function run(fn) {
  try {
    await fn();
    status('updated ' + new Date().toLocaleTimeString());
  } catch (e) {
    if (e instanceof AuthError) showLogin(e.message === 'no token' ? '' : e.message);
    else status(e.message, true);
  }
}

function navigate() {
  clearInterval(timer);
  if (!sessionStorage.getItem(TOKEN_KEY)) { showLogin(''); return; }
  $('#login').hidden = true;
  $('#logout').hidden = false;
  const r = routeOf();
  document.body.dataset.view = r.view;
  document.body.dataset.state = 'loading';
  const views = { fleet: fleetView, host: hostView, tag: tagView };
  current = views[r.view](r.arg);
  run(current.refresh);
  timer = setInterval(() => { if (!document.hidden) run(current.refresh); }, REFRESH_MS);
}

function ready() { document.body.dataset.state = 'ready'; }

/* ---- charts ------------------------------------------------------------------------------- */

function whenUplot() {
  return window.uPlot ? Promise.resolve() : new Promise((res) => addEventListener('load', res));
}

/* A uPlot chart in el: xs in ms, series [{label, values, color, dash}]. */
async function lineChart(el, xs, series, opts = {}) {
  await whenUplot();
  el.innerHTML = '';
  const data = [xs.map((x) => x / 1000), ...series.map((s) => s.values)];
  const o = {
    width: opts.width || 720, height: opts.height || 240,
    scales: { x: { time: opts.time !== false } },
    axes: [{}, { values: (u, v) => v.map((b) => (opts.yfmt || fmtBytes)(b)), size: 80 }],
    series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5,
      dash: s.dash, paths: s.bars ? uPlot.paths.bars({ size: [0.9] }) : undefined,
      fill: s.bars ? s.color + '55' : undefined, value: (u, v) => (opts.yfmt || fmtBytes)(v) }))],
  };
  if (opts.xfmt) o.axes[0] = { values: (u, v) => v.map(opts.xfmt) };
  return new uPlot(o, data, el);
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
      <th class="num">Suspects</th><th>Last seen</th></tr></thead><tbody></tbody></table>`;
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
      }).catch(() => {}).finally(() => { active--; pump(); });
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
    const n = { ok: 0, warn: 0, critical: 0 };
    for (const h of hosts) if (h.nonpaged_level in n) n[h.nonpaged_level]++;
    $('#cards').innerHTML = `<div class="card"><b>${hosts.length}</b>hosts</div>` +
      `<div class="card"><b>${hosts.filter((h) => h.connected).length}</b>connected</div>` +
      `<div class="card"><b class="err">${n.critical}</b>critical</div>` +
      `<div class="card"><b>${n.warn}</b>warn</div>` +
      `<div class="card"><b>${hosts.reduce((a, h) => a + (h.suspects || 0), 0)}</b>leak suspects</div>`;
    const rows = hosts.map((h) => {
      const lvl = limitLevel(h.nonpaged_level, h.nonpaged_limit_bytes);
      const used = `${bar(h.nonpaged_ratio, lvl)}${fmtBytes(h.nonpaged_bytes)} / ` +
        limitText(h.nonpaged_limit_bytes);
      const sp = h.suspects || 0;
      return `<tr data-host="${esc(h.name)}" class="lvl-${esc(lvl)}">` +
        `<td class="host">${level(lvl)}${hostLink(h.name, h.collector)}</td>` +
        `<td>${esc(h.os || '')}${h.arch ? ' ' + esc(h.arch) : ''}</td>` +
        `<td title="${esc(h.nonpaged_limit_detail || '')}">${used}</td>` +
        `<td class="num pct">${limitPct(h.nonpaged_ratio, h.nonpaged_limit_bytes)}</td><td class="eta">${fmtEta(h.nonpaged_eta_ms)}</td>` +
        `<td class="spark-cell" data-host="${esc(h.name)}">${sparkCache.get(h.name) || ''}</td>` +
        `<td class="num">${limitPct(h.paged_ratio, h.paged_limit_bytes)}</td>` +
        `<td class="num suspects"><span class="badge${sp ? '' : ' zero'}">${sp}</span></td>` +
        `<td>${h.connected ? fmtAgo(h.last_seen_ms) : '<span class="mute">offline, ' + fmtAgo(h.last_seen_ms) + '</span>'}</td></tr>`;
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
      const { suspects } = await leaksP;
      $('#suspects').innerHTML = suspects.length ? suspectTable(suspects.slice(0, 20), true) +
        (suspects.length > 20 ? `<p class="mute">${suspects.length - 20} more</p>` : '')
        : '<span class="mute">none: no tag grows like a leak</span>';
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

function suspectTable(list, withHost) {
  return `<table class="suspects"><thead><tr>${withHost ? '<th>Host</th>' : ''}<th>Tag</th><th>Pool</th>` +
    '<th class="num">Growth / h</th><th class="num">Now</th><th class="num">Score</th><th>Driver</th><th>Evidence</th></tr></thead><tbody>' +
    list.map((s) => `<tr data-host="${esc(s.host)}" data-tag="${esc(s.tag)}">` +
      (withHost ? `<td>${hostLink(s.host)}</td>` : '') +
      `<td class="tag">${tagLink(s.tag)}</td><td>${esc(typeText(s))}</td>` +
      `<td class="num">${fmtBytes(Math.round(s.growth_bytes_per_h))}</td>` +
      `<td class="num">${fmtBytes(s.current_bytes)}</td><td class="num">${(s.score ?? 0).toFixed(2)}</td>` +
      `<td>${esc(s.driver || '')}${s.description ? ' <span class="mute">' + esc(s.description) + '</span>' : ''}</td>` +
      `<td class="evidence">${esc(s.evidence || '')}` +
        (typeof s.confidence === 'number' ? ` <span class="mute">(confidence ${s.confidence.toFixed(2)}${s.method === 'compare' ? ', screens compared only' : ''})</span>` : '') +
        `${s.finding && s.finding.with ? ' <span class="mute">' +
        (s.finding.head ? 'grew with ' : 'with ') + esc(s.finding.with) + '</span>' : ''}</td></tr>`).join('') +
    '</tbody></table>';
}

/* ---- host page ---------------------------------------------------------------------------- */

const POOL_COLS = [ /* [key, header, numeric, has change column] */
  ['tag', 'Tag', false, false], ['type', 'Type', false, false], ['allocs', 'Allocs', true, true],
  ['frees', 'Frees', true, true], ['diff', 'Diff', true, true], ['bytes', 'Bytes', true, true],
  ['per_alloc', 'Per Alloc', true, false]];

function hostView(name) {
  const st = { sort: 'bytes', order: 'desc', by_change: false, pool: 'both', include: '', exclude: '',
               changes: true, session: '' };
  const v = $('#view');
  v.innerHTML = `
    <h1>${level('')}<span id="host-name">${esc(name)}</span> <span class="mute" id="host-os"></span></h1>
    <div class="cards" id="host-cards"></div>
    <div class="cols">
      <div><h2>Nonpaged pool used vs limit <span class="mute" id="np-note"></span></h2><div class="chart" id="np-chart"></div></div>
      <div><h2>Top growing tags <span class="mute">(leak suspects)</span></h2><div id="host-suspects"></div></div>
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
  let chart = null;

  function header() {
    const cells = [];
    for (const [k, label, num, chg] of POOL_COLS) {
      const cls = [num ? 'num' : '', st.sort === k ? 'sorted' : '', st.sort === k && st.order === 'asc' ? 'asc' : '']
        .filter(Boolean).join(' ');
      const sortable = k === 'type' ? '' : ` data-sort="${k}"`; /* the API sorts by these */
      cells.push(`<th${sortable} data-col="${k}" class="${cls}">${label}</th>`);
      if (chg) cells.push(`<th class="num chg">Δ</th>`);
    }
    cells.push('<th>Driver / description</th>');
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
    header();
    $('#pool tbody').innerHTML = t.rows.map((r) => {
      const cells = [];
      for (const [k, , num, chg] of POOL_COLS) {
        const val = k === 'tag' ? tagLink(r.tag) : k === 'type' ? esc(typeText(r)) : esc(r[k]);
        cells.push(`<td class="${k}${num ? ' num' : ''}">${val}</td>`);
        if (chg) cells.push(`<td class="${k}_change num ${chgClass(r[k + '_change'])}">${esc(fmtChg(r[k + '_change']))}</td>`);
      }
      cells.push(`<td class="driver">${esc(r.driver || '')}${r.description ? ' <span class="mute">' + esc(r.description) + '</span>' : ''}</td>`);
      return `<tr data-tag="${esc(r.tag)}" data-type="${esc(r.type)}"${typeof r.session === 'number' ? ` data-session="${r.session}"` : ''}>${cells.join('')}</tr>`;
    }).join('');
    noteSessions(t.rows);
    $('#pool-count').textContent = `${t.total_rows} rows` + (t.count < t.total_rows ? ` (${t.count} shown)` : '') +
      (t.timestamp_ms ? `, sample of ${new Date(t.timestamp_ms).toLocaleString()}` : '') +
      (t.prev_timestamp_ms ? ` (changes since ${new Date(t.prev_timestamp_ms).toLocaleTimeString()})` : '');
    ready();
  }

  async function refresh() {
    const [h, leaks] = await Promise.all([api('/api/v1/hosts/' + encodeURIComponent(name)),
      api('/api/v1/leaks').catch(() => ({ suspects: [] }))]);
    $('h1 .lvl').className = 'lvl ' + (limitLevel(h.nonpaged_level, h.nonpaged_limit_bytes) || 'unknown');
    $('#host-os').textContent = [h.os, h.arch, h.connected ? 'connected' : 'offline'].filter(Boolean).join(' · ');
    const tot = h.totals || {};
    $('#host-cards').innerHTML =
      `<div class="card"><b>${limitPct(h.nonpaged_ratio, h.nonpaged_limit_bytes)}</b>nonpaged ${fmtBytes(h.nonpaged_bytes)} / ${limitText(h.nonpaged_limit_bytes)}</div>` +
      `<div class="card"><b>${fmtEta(h.nonpaged_eta_ms)}</b>nonpaged ETA to limit</div>` +
      `<div class="card"><b>${limitPct(h.paged_ratio, h.paged_limit_bytes)}</b>paged ${fmtBytes(h.paged_bytes)} / ${limitText(h.paged_limit_bytes)}</div>` +
      `<div class="card"><b>${fmtBytes(tot.physical_memory_bytes)}</b>memory, ${fmtBytes(tot.available_bytes)} available</div>` +
      `<div class="card"><b>${h.samples ?? 0}</b>samples, last ${fmtAgo(h.last_seen_ms)}</div>`;
    const mine = leaks.suspects.filter((s) => s.host === name);
    $('#host-suspects').innerHTML = mine.length ? suspectTable(mine, false) : '<span class="mute">none</span>';
    const hist = h.history || [];
    if (hist.length >= 2) {
      const xs = hist.map((p) => p.ts_ms);
      const series = [{ label: 'nonpaged used', values: hist.map((p) => p.nonpaged_bytes), color: '#1f4e79' }];
      /* The limit is drawn when it fits a readable scale; far above, the used curve would be
       * a flat line at the bottom, so the limit is named instead. */
      const lim = h.nonpaged_limit_bytes, top = Math.max(...series[0].values);
      if (lim && top >= lim / 4)
        series.push({ label: 'limit', values: hist.map(() => lim), color: '#c62828', dash: [6, 4] });
      $('#np-note').textContent = !lim ? '(limit unknown)' : top >= lim / 4 ? ''
        : `(limit ${fmtBytes(lim)} is off this scale: ${fmtPct(top / lim)} at most)`;
      if (chart) chart.destroy();
      chart = await lineChart($('#np-chart'), xs, series, { width: 640, height: 220 });
    } else {
      $('#np-chart').innerHTML = '<span class="mute">not enough history yet</span>';
    }
    await loadPool();
  }
  return { refresh };
}

/* ---- tag page ----------------------------------------------------------------------------- */

function tagView(tag) {
  const v = $('#view');
  v.innerHTML = `
    <h1>Tag <span class="tagtxt" id="tag-name">${esc(tag)}</span> <span class="mute" id="tag-desc"></span></h1>
    <div class="toolbar"><label>Pool <select id="tag-pool"><option value="nonpaged">nonpaged</option>
      <option value="paged">paged</option><option value="both">both</option></select></label>
      <span class="mute" id="tag-pool-note"></span></div>
    <div class="cards" id="tag-cards"></div>
    <div class="cols">
      <div><h2>Distribution across the fleet <span class="mute">(hosts by bytes)</span></h2><div class="chart" id="dist"></div></div>
      <div><h2>Leak suspects</h2><div id="tag-suspects"></div></div>
    </div>
    <h2>Hosts <span class="mute">(outliers by robust z-score flagged)</span></h2>
    <table id="tag-hosts"><thead><tr><th>Host</th><th>Pool</th><th class="num">Bytes</th><th class="num">Diff</th>
      <th class="num">Robust z</th><th>Outlier</th><th class="num">OS build</th></tr></thead><tbody></tbody></table>`;
  let chart = null;
  /* One pool type at a time, as poolmon shows a tag: a tag's paged and nonpaged allocations
   * are different allocations, and mixing them skews the median, p90 and outliers. The first
   * view shows the type holding more bytes across the fleet. */
  let pool = null;
  $('#tag-pool').addEventListener('change', (e) => { pool = e.target.value; refresh(); });
  async function refresh() {
    const base = '/api/v1/tags/' + encodeURIComponent(tag);
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
      `<td class="num">${esc(h.bytes)}</td><td class="num">${esc(h.diff)}</td>` +
      `<td class="num">${h.robust_z == null ? '—' : Number(h.robust_z).toFixed(2)}</td>` +
      `<td>${h.outlier ? '<span class="badge">outlier</span>' : ''}</td><td class="num">${esc(h.os_build ?? '')}</td></tr>`).join('');
    const sus = t.suspects || [];
    $('#tag-suspects').innerHTML = sus.length ? suspectTable(sus, true) : '<span class="mute">none</span>';
    if (hosts.length) {
      /* Hosts ranked by bytes, largest first: the shape shows the spread and the outliers. */
      const xs = hosts.map((_, i) => (i + 1) * 1000);
      if (chart) chart.destroy();
      chart = await lineChart($('#dist'), xs, [{ label: 'bytes', values: hosts.map((h) => h.bytes), color: '#1f4e79', bars: true }],
        { width: 560, height: 220, time: false, xfmt: (x) => (x >= 1 && Number.isInteger(x) && hosts[x - 1] ? '#' + x : '') });
    } else {
      $('#dist').innerHTML = '<span class="mute">no host has this tag</span>';
    }
    ready();
  }
  return { refresh };
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
  navigate();
});
