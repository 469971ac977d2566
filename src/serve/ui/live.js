// The live page of wattage run (src/serve/ui.h): reads the daemon's JSON API and draws what it
// says with SVG elements made here. Text from the API goes into the page as text nodes only.
"use strict";

const NOW_EVERY_MS = 5000; // status, alerts and jobs
const CHARTS_EVERY_MS = 15000; // the last hour's series
const WINDOW = "-1h";
const STEP = "10s";
const SERVING_EVERY_MS = 15000; // the serving targets' last minutes
const SERVING_WINDOW = "-5m";
const SERVING_STEP = "2s";
const SVG = "http://www.w3.org/2000/svg";
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22"];

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("wattage-token") || "";

// A token in the address's fragment (never sent to the server) is taken once and removed.
(function takeFragmentToken() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    token = decodeURIComponent(m[1]);
    sessionStorage.setItem("wattage-token", token);
    history.replaceState(null, "", location.pathname + location.search);
  }
})();

class Unauthorized extends Error {}

async function api(path) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const r = await fetch(path, { headers, cache: "no-store", credentials: "omit" });
  if (r.status === 401 || r.status === 403) throw new Unauthorized(path);
  if (!r.ok) {
    let msg = "HTTP " + r.status;
    try { msg = (await r.json()).error || msg; } catch (e) { /* not JSON */ }
    throw new Error(path + ": " + msg);
  }
  return r.json();
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmt(v, digits) {
  return Number.isFinite(v) ? v.toFixed(digits) : "–";
}

function watts(v) {
  return Number.isFinite(v) ? (v >= 10000 ? (v / 1000).toFixed(2) + " kW" : v.toFixed(1) + " W") : "–";
}

function clock(t_s) {
  return new Date(t_s * 1000).toISOString().slice(11, 19);
}

function setState(text, bad) {
  const s = $("state");
  s.textContent = text;
  s.className = bad ? "bad" : "";
}

function askToken(why) {
  $("login").hidden = false;
  $("main").hidden = true;
  $("login-error").textContent = why || "";
  setState("a bearer token is needed to read this daemon", true);
}

// ---- now: GPUs and the node ----

function cpuPower(cpu) {
  let w = 0, any = false;
  for (const c of cpu || []) {
    if (Number.isFinite(c.power_watts)) { w += c.power_watts; any = true; }
  }
  return any ? w : NaN;
}

function drawNow(st) {
  $("host").textContent = st.host && st.host.name ? st.host.name : "";
  const gw = Number.isFinite(st.gpu_power_watts) ? st.gpu_power_watts : NaN;
  const cw = cpuPower(st.cpu);
  const node = (Number.isFinite(gw) ? gw : 0) + (Number.isFinite(cw) ? cw : 0);
  $("node-power").textContent = Number.isFinite(gw) || Number.isFinite(cw) ? watts(node) : "–";
  $("node-power").title = "GPUs " + watts(gw) + (Number.isFinite(cw) ? ", CPU packages " + watts(cw) : "");
  const body = $("gpus").tBodies[0];
  body.replaceChildren();
  for (const g of st.gpus || []) {
    const tr = el("tr");
    tr.dataset.gpu = g.index;
    tr.append(el("td", g.index), el("td", g.model || ""),
      el("td", watts(g.power_watts), "num power"),
      el("td", watts(g.power_limit_watts), "num"),
      el("td", Number.isFinite(g.utilization_ratio) ? fmt(100 * g.utilization_ratio, 0) + " %" : "–", "num"),
      el("td", Number.isFinite(g.temperature_celsius) ? fmt(g.temperature_celsius, 0) + " °C" : "–", "num"),
      el("td", g.up === false ? "not answering" : (g.throttled && g.throttled.length ? "throttled: " + g.throttled.join(", ") : "ok")));
    body.append(tr);
  }
  if (!body.rows.length) {
    const tr = el("tr");
    const td = el("td", "no GPU is read on this node");
    td.colSpan = 7;
    tr.append(td);
    body.append(tr);
  }
}

function drawAlerts(a) {
  const sec = $("alerts");
  const body = sec.querySelector("tbody");
  body.replaceChildren();
  const firing = (a.alerts || []).filter((x) => x.state === "firing");
  for (const x of firing) {
    const tr = el("tr");
    tr.className = "sev-" + (x.severity || "");
    const labels = Object.entries(x.labels || {}).map(([k, v]) => k + "=" + v).join(", ");
    tr.append(el("td", x.alertname), el("td", x.severity || ""), el("td", labels),
      el("td", Number.isFinite(x.value) ? fmt(x.value, 2) : "", "num"),
      el("td", x.fired_at || x.active_since || ""));
    tr.title = x.summary || "";
    body.append(tr);
  }
  sec.querySelector(".empty").hidden = firing.length > 0;
  sec.dataset.firing = String(firing.length);
}

function drawJobs(j) {
  const sec = $("jobs");
  const body = sec.querySelector("tbody");
  body.replaceChildren();
  const running = (j.jobs || []).filter((x) => (x.state ? x.state === "running" : x.end_s == null));
  for (const x of running) {
    const tr = el("tr");
    const e = x.kpi && Number.isFinite(x.kpi.energy_joules) ? x.kpi.energy_joules : NaN;
    const gpus = Array.isArray(x.gpus) ? x.gpus.join(",") : (x.gpus || "all");
    tr.append(el("td", x.id), el("td", x.name), el("td", gpus),
      el("td", Number.isFinite(x.start_s) ? clock(x.start_s) + " UTC" : ""),
      el("td", Number.isFinite(e) ? (e / 3.6e6).toFixed(4) + " kWh" : "–", "num"));
    body.append(tr);
  }
  sec.querySelector(".empty").hidden = running.length > 0;
  sec.dataset.running = String(running.length);
}

// ---- charts ----

function niceTicks(lo, hi, n) {
  const span = hi - lo || 1;
  const raw = span / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(v);
  return out;
}

// lines: [{name, pts: [[t, v], ...]}]; draws into the figure's svg and counts the points.
function drawChart(name, lines, unit, reading) {
  const fig = document.querySelector('figure[data-chart="' + name + '"]');
  const svg = fig.querySelector("svg");
  svg.replaceChildren();
  const W = 800, H = 220, L = 56, R = 130, T = 10, B = 26;
  const now = Date.now() / 1000, t0 = now - 3600;
  let lo = Infinity, hi = -Infinity, n = 0;
  for (const l of lines) for (const [, v] of l.pts) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (!Number.isFinite(lo)) {
    svg.append(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no readings in the last hour"));
    fig.dataset.points = "0";
    fig.querySelector(".reading").textContent = "Nothing stored for this chart in the last hour.";
    return;
  }
  if (lo > 0 && lo < hi / 2) lo = 0;
  if (hi === lo) { hi += 1; lo = Math.max(0, lo - 1); }
  const pad = 0.08 * (hi - lo);
  hi += pad;
  lo = lo === 0 ? 0 : lo - pad;
  const x = (t) => L + (W - L - R) * (t - t0) / (now - t0);
  const y = (v) => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
  for (const v of niceTicks(lo, hi, 4)) {
    svg.append(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
    svg.append(svgEl("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end" }, String(+v.toFixed(2))));
  }
  for (let m = 0; m <= 60; m += 15) {
    const t = t0 + m * 60;
    svg.append(svgEl("text", { x: x(t), y: H - 8, "text-anchor": "middle" }, m === 60 ? "now" : "-" + (60 - m) + " min"));
  }
  svg.append(svgEl("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }));
  svg.append(svgEl("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }));
  svg.append(svgEl("text", { x: 12, y: T + 10, "text-anchor": "start" }, "(" + unit + ")"));
  lines.forEach((l, i) => {
    const color = COLORS[i % COLORS.length];
    // A gap in the readings (over three steps) breaks the line.
    let seg = [], last = -Infinity;
    const flush = () => {
      if (seg.length > 1) svg.append(svgEl("polyline", { points: seg.join(" "), stroke: color }));
      else if (seg.length === 1) {
        const [px, py] = seg[0].split(",");
        svg.append(svgEl("circle", { cx: px, cy: py, r: 1.5, fill: color }));
      }
      seg = [];
    };
    for (const [t, v] of l.pts) {
      if (t < t0) continue;
      if (t - last > 30) flush();
      seg.push(x(t).toFixed(1) + "," + y(v).toFixed(1));
      last = t;
      n++;
    }
    flush();
    const ly = T + 12 + 14 * i;
    svg.append(svgEl("line", { x1: W - R + 8, x2: W - R + 22, y1: ly - 4, y2: ly - 4, stroke: color, "stroke-width": 2 }));
    svg.append(svgEl("text", { x: W - R + 26, y: ly }, l.name));
  });
  fig.dataset.points = String(n);
  fig.querySelector(".reading").textContent = reading;
}

function gpuName(s) {
  return "GPU " + (s.labels.gpu !== undefined ? s.labels.gpu : "?") + (s.node ? " on " + s.node : "");
}

function byGpu(series) {
  return series.slice().sort((a, b) => (a.node + ":" + (+a.labels.gpu)).localeCompare(b.node + ":" + (+b.labels.gpu), undefined, { numeric: true }));
}

function mean(pts) {
  return pts.length ? pts.reduce((s, p) => s + p[1], 0) / pts.length : NaN;
}

// Node power per step: the GPUs' mean power plus the CPU packages' from their energy counters.
function nodeLine(power, cpu) {
  // A step counts only where every GPU has its mean: a partial sum would read as a dip.
  const sum = new Map(), count = new Map();
  for (const s of power.series) {
    for (const [t, v] of s.points) {
      sum.set(t, (sum.get(t) || 0) + v);
      count.set(t, (count.get(t) || 0) + 1);
    }
  }
  for (const t of [...sum.keys()]) if (count.get(t) !== power.series.length) sum.delete(t);
  const cpuSum = new Map();
  for (const s of cpu.series) {
    if (s.labels.domain && s.labels.domain !== "package") continue;
    const p = s.points;
    for (let i = 1; i < p.length; i++) {
      const dt = p[i][0] - p[i - 1][0], de = p[i][1] - p[i - 1][1];
      if (dt > 0 && de >= 0) cpuSum.set(p[i][0], (cpuSum.get(p[i][0]) || 0) + de / dt);
    }
  }
  const ts = [...sum.keys()].sort((a, b) => a - b);
  return ts.map((t) => [t, sum.get(t) + (cpuSum.get(t) || 0)]);
}

async function refreshCharts() {
  const q = (m) => api("/api/v1/series?match=" + encodeURIComponent(m) + "&from=" + WINDOW + "&step=" + STEP);
  const [pw, ut, tc, cpu] = await Promise.all([q("wattage_gpu_power_watts"),
    q("wattage_gpu_utilization_ratio"), q("wattage_gpu_temperature_celsius"),
    q("wattage_cpu_energy_joules_total")]);
  const power = byGpu(pw.series).map((s) => ({ name: gpuName(s), pts: s.points }));
  const top = power.map((l) => [l.name, mean(l.pts)]).sort((a, b) => b[1] - a[1])[0];
  drawChart("gpu_power", power, "W", top ? "Highest mean power over the hour: " + top[0] + " at " + watts(top[1]) + "." : "");
  const node = nodeLine(pw, cpu);
  const peak = node.reduce((m, p) => Math.max(m, p[1]), -Infinity);
  drawChart("node_power", [{ name: "node", pts: node }], "W",
    node.length ? "Mean " + watts(mean(node)) + ", peak " + watts(peak) + " (10 s means)" + (cpu.series.length ? "." : "; no CPU package counters on this node.") : "");
  const util = byGpu(ut.series).map((s) => ({ name: gpuName(s), pts: s.points.map(([t, v]) => [t, 100 * v]) }));
  const idle = util.filter((l) => mean(l.pts) <= 5).map((l) => l.name);
  drawChart("gpu_util", util, "%", idle.length ? "Idle (mean ≤ 5 %) over the hour: " + idle.join(", ") + "." : "Every GPU did work over the hour.");
  const temp = byGpu(tc.series).map((s) => ({ name: gpuName(s), pts: s.points }));
  const hot = temp.map((l) => [l.name, l.pts.reduce((m, p) => Math.max(m, p[1]), -Infinity)]).sort((a, b) => b[1] - a[1])[0];
  drawChart("gpu_temp", temp, "°C", hot ? "Hottest: " + hot[0] + " at " + fmt(hot[1], 0) + " °C." : "");
}

// ---- serving: each inference target over the last five minutes ----

// PromQL's increase() without extrapolation: a drop is a restart, the counter counted from 0.
function increase(points) {
  if (points.length < 2) return NaN;
  let inc = 0;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1][1], b = points[i][1];
    inc += b < a ? b : b - a;
  }
  return inc;
}

// PromQL's histogram_quantile on [[le, count]] (promql/quantile.go bucketQuantile): sorted, +Inf
// last, equal bounds merged, the counts made monotonic, then the rank's bucket interpolated.
function histQuantile(q, buckets) {
  const merged = new Map();
  for (const [le, c] of buckets) merged.set(le, (merged.get(le) || 0) + c);
  const b = [...merged.entries()].sort((x, y) => x[0] - y[0]);
  if (b.length < 2 || b[b.length - 1][0] !== Infinity) return NaN;
  for (let i = 1; i < b.length; i++) if (b[i][1] < b[i - 1][1]) b[i][1] = b[i - 1][1];
  const total = b[b.length - 1][1];
  if (!(total > 0)) return NaN;
  const rank = q * total;
  let i = 0;
  while (i < b.length - 1 && b[i][1] < rank) i++;
  if (i === b.length - 1) return b[b.length - 2][0];
  if (i === 0 && b[0][0] <= 0) return b[0][0];
  const lo = i > 0 ? b[i - 1][0] : 0, below = i > 0 ? b[i - 1][1] : 0;
  return lo + (b[i][0] - lo) * (rank - below) / (b[i][1] - below);
}

function servingRows(en, tok, lat, run, wait) {
  const rows = new Map();
  const row = (s) => {
    const key = s.node + "\u0000" + s.labels.target;
    if (!rows.has(key)) {
      rows.set(key, { target: s.labels.target, node: s.node, models: new Set(), energy: NaN,
        tokens: NaN, buckets: new Map(), running: NaN, waiting: NaN });
    }
    const r = rows.get(key);
    if (s.labels.model !== undefined) r.models.add(s.labels.model);
    return r;
  };
  const add = (a, b) => (Number.isFinite(b) ? (Number.isFinite(a) ? a + b : b) : a);
  for (const s of en.series) row(s).energy = add(row(s).energy, increase(s.points));
  for (const s of tok.series) row(s).tokens = add(row(s).tokens, increase(s.points));
  for (const s of lat.series) {
    const r = row(s), le = s.labels.le === "+Inf" ? Infinity : parseFloat(s.labels.le);
    const inc = increase(s.points);
    if (Number.isFinite(inc) && !Number.isNaN(le)) r.buckets.set(le, (r.buckets.get(le) || 0) + inc);
  }
  const last = (s) => (s.points.length ? s.points[s.points.length - 1][1] : NaN);
  for (const s of run.series) row(s).running = add(row(s).running, last(s));
  for (const s of wait.series) row(s).waiting = add(row(s).waiting, last(s));
  return [...rows.values()].sort((a, b) => (a.node + ":" + a.target).localeCompare(b.node + ":" + b.target));
}

function drawServing(rows) {
  const sec = $("serving");
  const body = sec.querySelector("tbody");
  body.replaceChildren();
  for (const r of rows) {
    const jpt = r.tokens > 0 && Number.isFinite(r.energy) ? r.energy / r.tokens : NaN;
    const tpk = r.energy > 0 && Number.isFinite(r.tokens) ? r.tokens / (r.energy / 3.6e6) : NaN;
    const p99 = histQuantile(0.99, [...r.buckets.entries()]);
    const tr = el("tr");
    tr.dataset.target = r.target;
    tr.dataset.energy = String(r.energy);
    tr.dataset.tokens = String(r.tokens);
    tr.append(el("td", r.target + (r.node ? " on " + r.node : "")), el("td", [...r.models].join(", ")),
      el("td", Number.isFinite(jpt) ? jpt.toPrecision(4) + " J" : "–", "num jpt"),
      el("td", Number.isFinite(tpk) ? Math.round(tpk).toLocaleString("en-US") : "–", "num tpk"),
      el("td", Number.isFinite(p99) ? p99.toPrecision(4) + " s" : "–", "num p99"),
      el("td", Number.isFinite(r.running) ? fmt(r.running, 0) : "–", "num running"),
      el("td", Number.isFinite(r.waiting) ? fmt(r.waiting, 0) : "–", "num waiting"));
    body.append(tr);
  }
  sec.querySelector(".empty").hidden = rows.length > 0;
  sec.dataset.targets = String(rows.length);
}

async function refreshServing() {
  const q = (m) => api("/api/v1/series?match=" + encodeURIComponent(m) + "&from=" + SERVING_WINDOW + "&step=" + SERVING_STEP);
  const [en, tok, lat, run, wait] = await Promise.all([q("wattage_inference_energy_joules_total"),
    q('wattage_inference_tokens_total{kind="generated"}'),
    q('wattage_inference_latency_seconds_bucket{kind="e2e"}'),
    q("wattage_inference_requests_running"), q("wattage_inference_requests_waiting")]);
  drawServing(servingRows(en, tok, lat, run, wait));
  $("serving").dataset.to = String(en.to); // the window's end, as the API took it
}

async function refreshNow() {
  const [st, al, jb] = await Promise.all([api("/api/v1/status"), api("/api/v1/alerts"), api("/api/v1/jobs")]);
  drawNow(st);
  drawAlerts(al);
  drawJobs(jb);
  setState("updated " + clock(Date.now() / 1000) + " UTC" + (st.health && st.health.status && st.health.status !== "ok" ? " · " + st.health.status : ""), st.health && st.health.status === "degraded");
}

let timers = [];
function schedule(fn, every) {
  const run = async () => {
    try {
      await fn();
    } catch (e) {
      if (e instanceof Unauthorized) {
        for (const t of timers) clearInterval(t);
        timers = [];
        askToken(token ? "The daemon refused this token." : "");
        return;
      }
      setState(String(e.message || e), true);
    }
  };
  run();
  timers.push(setInterval(run, every));
}

function start() {
  $("login").hidden = true;
  $("main").hidden = false;
  schedule(refreshNow, NOW_EVERY_MS);
  schedule(refreshCharts, CHARTS_EVERY_MS);
  schedule(refreshServing, SERVING_EVERY_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token = $("token").value.trim();
    $("token").value = "";
    sessionStorage.setItem("wattage-token", token);
    start();
  });
  start();
});
