// The Morpheus RM's operator page. Plain JS and SVG, no library:
// every asset is embedded in the RM. It polls the RM's /ui/api/* JSON every
// POLL_MS with "Authorization: Bearer TOKEN"; the token is pasted once (or
// given as #token=... in the URL, which is moved to sessionStorage and
// stripped from the address bar) and lives only in this tab's sessionStorage.
'use strict';

const POLL_MS = 5000;
const TOKEN_KEY = 'morpheus.token';
const SVG = 'http://www.w3.org/2000/svg';
const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1',
                '#ff9da7', '#9c755f', '#bab0ac'];
let selected = null;
let lastPlan = null;
let timer = null;

function $(id) { return document.getElementById(id); }

// #token=T moves T to sessionStorage; #reservation=ID opens that detail.
// The fragment is then stripped from the address bar (and history).
// Values are percent-decoded only ('+' stays '+', as in base64 tokens).
function takeFragment() {
  const params = new Map(location.hash.slice(1).split('&').filter(p => p.includes('=')).map(
      p => [p.slice(0, p.indexOf('=')), decodeURIComponent(p.slice(p.indexOf('=') + 1))]));
  if (params.has('token')) sessionStorage.setItem(TOKEN_KEY, params.get('token'));
  if (params.has('reservation')) selected = params.get('reservation');
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
}

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

class AuthError extends Error {}

async function api(path) {
  const r = await fetch(path, {headers: {'Authorization': 'Bearer ' + token()}, cache: 'no-store'});
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (r.status === 401 || r.status === 403) {
    throw new AuthError(errorText(body) || ('HTTP ' + r.status));
  }
  if (!r.ok) throw new Error(errorText(body) || ('HTTP ' + r.status));
  return body;
}

function errorText(body) {
  if (!body) return '';
  if (body.error) return body.error.message || body.error.code;
  if (body.RemoteException) return body.RemoteException.message;
  return '';
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

function res(r) {
  if (!r) return '';
  return (r.memory_mib / 1024).toFixed(1) + ' GiB, ' + r.vcores + ' vcores';
}

function time(ms) { return ms ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + 'Z' : ''; }

function fillTable(id, rows) {
  const body = $(id).tBodies[0];
  body.replaceChildren();
  for (const cells of rows) {
    const tr = document.createElement('tr');
    for (const c of cells) tr.appendChild(c instanceof Node ? wrapTd(c) : el('td', c));
    body.appendChild(tr);
  }
}

function wrapTd(node) { const td = document.createElement('td'); td.appendChild(node); return td; }

function renderCluster(c) {
  const cards = [['Live nodes', c.live_nodes], ['Lost nodes', c.lost_nodes],
                 ['Capacity', res(c.capacity)], ['Used', res(c.used)],
                 ['Running apps', c.apps.filter(a => a.state === 'RUNNING').length]];
  $('cards').replaceChildren(...cards.map(([k, v]) => {
    const d = el('div', k, 'card');
    d.appendChild(el('b', v));
    return d;
  }));
  // admin_state: in-service, drained, decommissioning or decommissioned (node-operations.md).
  const nodeState = n => n.admin_state === 'decommissioned' ? 'decommissioned'
      : !n.live ? el('span', 'lost', 'lost')
      : n.admin_state === 'in-service' ? 'live' : n.admin_state;
  fillTable('nodes', c.nodes.map(n => [n.id, nodeState(n),
                                       res(n.total), res(n.used), n.containers,
                                       time(n.last_heartbeat_ms)]));
  fillTable('queues', c.queues.map(q => [q.name, q.kind, q.kind === 'ad-hoc' ? q.weight : '',
                                         q.kind === 'reservation' ? res(q.guarantee) : '',
                                         q.running, q.pending, res(q.used)]));
  fillTable('apps', c.apps.map(a => [a.id, a.name, a.user, a.reservation || a.queue, a.state,
                                     Math.round(a.progress * 100) + '%', a.containers,
                                     res(a.used), schedulerView(a)]));
}

// What the scheduler says of an app: Carbyne's least allocation now and
// estimated remaining time (the rest is lent), or why it is pending.
function schedulerView(a) {
  if (a.altruism) {
    const left = Math.round(a.altruism.estimated_remaining_ms / 1000);
    return el('span', 'needs ' + res(a.altruism.need) + ' now, ~' + left + ' s left', 'altruism');
  }
  return (a.pending_reasons || []).join('; ');
}

function renderProposals(p, err) {
  const note = $('proposals-note');
  if (err) {
    note.textContent = 'Could not read proposals: ' + err;
    fillTable('proposals', []);
    return;
  }
  if (!p.configured) {
    note.textContent = p.message;
    fillTable('proposals', []);
    return;
  }
  const list = p.proposals || [];
  note.textContent = list.length + ' pending, read from morpheus-inference at ' + p.address + '.';
  fillTable('proposals', list.map(x => [x.proposal_id, x.job_key, x.owner, x.runs_used || 0,
                                        (x.skyline || []).length,
                                        Math.round((x.reprovision_budget_container_ms || 0) / 1000),
                                        time(Number(x.created_ms || 0))]));
}

// The stacked chart: one <g class="series" data-reservation=ID> per reservation.
function renderPlan(plan) {
  lastPlan = plan;
  const dim = $('dimension').value;
  const W = 1000, H = 320, L = 60, R = 10, T = 10, B = 30;
  const n = plan.series.length ? plan.series[0][dim].length : 0;
  const span = plan.to_ms - plan.from_ms;
  const x = ms => L + (ms - plan.from_ms) / span * (W - L - R);
  const totals = new Array(n).fill(0);
  for (const s of plan.series) s[dim].forEach((v, i) => { totals[i] += v; });
  const cap = plan.capacity[dim];
  const ymax = Math.max(cap, ...totals, 1) * 1.05;
  const y = v => H - B - v / ymax * (H - T - B);
  const root = svg('svg', {viewBox: `0 0 ${W} ${H}`, role: 'img'});
  root.appendChild(axes(plan, x, y, ymax, dim, W, H, L, R, B));
  const base = new Array(n).fill(0);
  plan.series.forEach((s, k) => {
    const g = svg('g', {'class': s.id === selected ? 'series selected' : 'series',
                        'data-reservation': s.id});
    const path = svg('path', {d: stackPath(s[dim], base, plan, x, y),
                              fill: COLORS[k % COLORS.length]});
    const title = svg('title');
    title.textContent = s.id + (s.name ? ' (' + s.name + ')' : '') + ', ' + s.user + ', ' + s.status;
    path.appendChild(title);
    g.appendChild(path);
    g.addEventListener('click', () => select(s.id));
    root.appendChild(g);
  });
  root.appendChild(svg('line', {'class': 'capacity', x1: L, x2: W - R, y1: y(cap), y2: y(cap)}));
  root.appendChild(svg('line', {'class': 'now', x1: x(plan.now_ms), x2: x(plan.now_ms), y1: T,
                                y2: H - B}));
  $('chart').replaceChildren(root);
  $('chart').dataset.series = String(plan.series.length);
  $('legend').replaceChildren(...plan.series.map((s, k) => {
    const sp = el('span', s.id + (s.name ? ' ' + s.name : '') + (s.periodic ? ' (periodic)' : ''));
    const i = el('i');
    i.style.background = COLORS[k % COLORS.length];
    sp.prepend(i);
    sp.addEventListener('click', () => select(s.id));
    return sp;
  }));
}

// The area between base and base+values (step shaped); advances base.
function stackPath(values, base, plan, x, y) {
  const top = [], bottom = [];
  values.forEach((v, i) => {
    const x0 = x(plan.from_ms + i * plan.bucket_ms), x1 = x(plan.from_ms + (i + 1) * plan.bucket_ms);
    bottom.push([x0, y(base[i])], [x1, y(base[i])]);
    base[i] += v;
    top.push([x0, y(base[i])], [x1, y(base[i])]);
  });
  const pts = top.concat(bottom.reverse());
  if (!pts.length) return '';
  return 'M' + pts.map(p => p[0].toFixed(1) + ',' + p[1].toFixed(1)).join('L') + 'Z';
}

function axes(plan, x, y, ymax, dim, W, H, L, R, B) {
  const g = svg('g', {'class': 'axis'});
  for (let h = 0; h <= 6; h++) {
    const t = plan.from_ms + (plan.to_ms - plan.from_ms) * h / 6;
    g.appendChild(svg('line', {x1: x(t), x2: x(t), y1: 10, y2: H - B}));
    const label = svg('text', {x: x(t), y: H - B + 16, 'text-anchor': 'middle'});
    label.textContent = new Date(t).toISOString().slice(11, 16) + 'Z';
    g.appendChild(label);
  }
  for (let k = 0; k <= 4; k++) {
    const v = ymax * k / 4;
    const label = svg('text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end'});
    label.textContent = dim === 'memory_mib' ? (v / 1024).toFixed(1) + ' GiB' : v.toFixed(1);
    g.appendChild(label);
    g.appendChild(svg('line', {x1: L, x2: W - R, y1: y(v), y2: y(v)}));
  }
  return g;
}

function select(id) {
  selected = id;
  if (lastPlan) renderPlan(lastPlan);
  refreshDetail();
}

async function refreshDetail() {
  if (!selected) return;
  try {
    renderDetail(await api('/ui/api/reservation?id=' + encodeURIComponent(selected)));
  } catch (e) {
    if (e instanceof AuthError) return showLogin(e.message);
    $('detail').hidden = false;
    $('detail-info').textContent = String(e.message);
    $('detail-chart').replaceChildren();
  }
}

// Planned allocation of one instance (memory) against the actual memory of its runs.
function renderDetail(r) {
  $('detail').hidden = false;
  $('detail-id').textContent = r.id + (r.name ? ' — ' + r.name : '');
  $('detail-info').textContent =
      `owner ${r.user}, queue ${r.queue}, ${r.period_ms ? 'every ' + r.period_ms / 60000 + ' min' : 'one-off'}, ` +
      `window ${time(r.arrival_ms)} .. ${time(r.deadline_ms)}, status ${r.status}` +
      (r.status_reason ? ' (' + r.status_reason + ')' : '') +
      `, DRA budget used ${Math.round(r.budget_used_container_ms / 1000)} of ` +
      `${Math.round(r.budget_container_ms / 1000)} container-s, ${r.runs.length} finished runs, ` +
      `${r.running.length} running`;
  const W = 1000, H = 220, L = 60, R = 10, T = 10, B = 25;
  const span = Math.max(r.window_ms, 1);
  let peak = 1;
  for (const a of r.planned) peak = Math.max(peak, a.resource.memory_mib);
  for (const run of r.runs) for (const v of run.memory_mib) peak = Math.max(peak, v);
  for (const l of r.running) peak = Math.max(peak, l.used.memory_mib);
  const x = off => L + Math.min(off, span) / span * (W - L - R);
  const y = v => H - B - v / (peak * 1.1) * (H - T - B);
  const root = svg('svg', {viewBox: `0 0 ${W} ${H}`});
  for (const a of r.planned) {
    root.appendChild(svg('rect', {'class': 'planned', x: x(a.offset_ms), y: y(a.resource.memory_mib),
                                  width: Math.max(x(a.end_offset_ms) - x(a.offset_ms), 1),
                                  height: y(0) - y(a.resource.memory_mib)}));
  }
  for (const run of r.runs.slice(-5)) {
    const pts = run.memory_mib.map((v, i) => [x(run.offset_ms + i * run.step_ms), y(v)]);
    if (!pts.length) continue;
    const line = svg('polyline', {'class': 'actual', points: pts.map(p => p.join(',')).join(' ')});
    const title = svg('title');
    title.textContent = 'run ' + run.app + ' started ' + time(run.start_ms);
    line.appendChild(title);
    root.appendChild(line);
  }
  for (const l of r.running) {
    root.appendChild(svg('circle', {'class': 'actual', cx: x(l.offset_ms), cy: y(l.used.memory_mib), r: 5}));
  }
  root.appendChild(detailAxes(x, y, span, peak * 1.1, W, H, L, R, T, B));
  $('detail-chart').replaceChildren(root);
  fillTable('dra', r.dra_history.map(h => [time(h.time_ms), h.policy, h.granted ? 'granted' : 'denied',
                                           res(h.extra), Math.round(h.duration_ms / 1000) + ' s',
                                           h.reason]));
}

// Minutes into the instance window (x) and GiB (y), with the series legend.
function detailAxes(x, y, span, ymax, W, H, L, R, T, B) {
  const g = svg('g', {'class': 'axis'});
  for (let k = 0; k <= 5; k++) {
    const off = span * k / 5;
    g.appendChild(svg('line', {x1: x(off), x2: x(off), y1: T, y2: H - B}));
    const label = svg('text', {x: x(off), y: H - B + 15, 'text-anchor': 'middle'});
    label.textContent = '+' + (off / 60000).toFixed(1) + ' min';
    g.appendChild(label);
  }
  for (let k = 0; k <= 4; k++) {
    const v = ymax * k / 4;
    const label = svg('text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end'});
    label.textContent = (v / 1024).toFixed(1) + ' GiB';
    g.appendChild(label);
  }
  const legend = svg('text', {x: L + 6, y: T + 12});
  legend.textContent = 'blue: planned memory of one instance; orange: actual memory of the ' +
                       'last runs (lines) and of running apps (dots)';
  g.appendChild(legend);
  return g;
}

function showLogin(message) {
  clearTimeout(timer);
  $('main').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('status').textContent = 'token needed';
  document.body.dataset.state = 'login';
}

async function poll() {
  try {
    const [cluster, plan] = await Promise.all([api('/ui/api/cluster'), api('/ui/api/plan')]);
    $('login').hidden = true;
    $('main').hidden = false;
    renderCluster(cluster);
    renderPlan(plan);
    let proposals = null, perr = null;
    try { proposals = await api('/ui/api/proposals'); } catch (e) { perr = e.message; }
    renderProposals(proposals, perr);
    await refreshDetail();
    $('status').textContent = 'updated ' + time(cluster.now_ms);
    document.body.dataset.state = 'ready';
  } catch (e) {
    if (e instanceof AuthError) return showLogin(e.message);
    $('status').textContent = 'error: ' + e.message;
  }
  timer = setTimeout(poll, POLL_MS);
}

function start() {
  takeFragment();
  $('login').addEventListener('submit', ev => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
    $('token').value = '';
    poll();
  });
  $('forget').addEventListener('click', () => { sessionStorage.removeItem(TOKEN_KEY); showLogin(''); });
  $('dimension').addEventListener('change', () => { if (lastPlan) renderPlan(lastPlan); });
  if (!token()) return showLogin('');
  poll();
}

start();
