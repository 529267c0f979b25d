// The console: each view fetches the REST API's JSON and draws it; nothing is computed on the
// server for the page. The token (when the worker has one) lives in this tab's session storage
// and goes out as an Authorization header, never in a URL.
"use strict";

const REFRESH_MS = 4000;
const TOKEN_KEY = "dora.console.token";
const $ = (id) => document.getElementById(id);

class Unauthorized extends Error {}

async function api(path, options = {}) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  const answer = await fetch(path, { ...options, headers });
  if (answer.status === 401) throw new Unauthorized("the token is missing or wrong");
  const body = await answer.json();
  if (!answer.ok) throw new Error(`${body.error || answer.status}: ${body.message || ""}`);
  return body;
}

// -- formatting -------------------------------------------------------------------------------

function bytes(n) {
  if (n === null || n === undefined) return "-";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}
const percent = (x) => (x === null || x === undefined ? "-" : `${(x * 100).toFixed(1)}%`);
const ratio = (hits, misses) => (hits + misses ? hits / (hits + misses) : null);
const when = (epochS) => (epochS ? new Date(epochS * 1000).toLocaleTimeString() : "-");

function cell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  row.append(td);
  return td;
}

function table(id, headings, rows) {
  const t = $(id);
  t.replaceChildren();
  const head = t.insertRow();
  for (const h of headings) {
    const th = document.createElement("th");
    th.textContent = h;
    head.append(th);
  }
  for (const fill of rows) fill(t.insertRow());
}

function bar(row, fraction) {
  const td = cell(row, "");
  const outer = document.createElement("div");
  outer.className = "bar";
  outer.title = percent(fraction);
  const inner = document.createElement("div");
  inner.style.width = `${Math.min(100, Math.max(0, fraction * 100))}%`;
  outer.append(inner);
  td.append(outer, ` ${percent(fraction)}`);
}

function cards(id, items) {
  $(id).replaceChildren(...items.map(([label, value, testId]) => {
    const card = document.createElement("div");
    card.className = "card";
    const l = document.createElement("div");
    l.className = "label";
    l.textContent = label;
    const v = document.createElement("div");
    v.className = "value";
    v.textContent = value;
    if (testId) v.id = testId;
    card.append(l, v);
    return card;
  }));
}

// -- views ------------------------------------------------------------------------------------

function identify(o) {
  $("identity").textContent = `version ${o.version} · up ${Math.round(o.uptime_s)} s`;
}

async function showOverview() {
  const o = await api("/v1/overview");
  identify(o);
  cards("overview-cards", [
    ["Ready", o.readiness.ready ? "yes" : "no", "ready"],
    ["Pages", o.readiness.pages],
    ["Metastore", o.readiness.metastore],
    ["Restored pages", String(o.restore.restored_pages)],
    ["Token", o.security.token ? "required" : "none"],
    ["TLS", o.security.tls ? "on" : "off"],
    ["Hit ratio", percent(ratio(o.stats.page_hits, o.stats.page_misses))],
  ]);
  $("roots").replaceChildren(...o.mount_roots.map((root) => {
    const li = document.createElement("li");
    li.textContent = root;
    return li;
  }));
  const ufs = o.ufs;
  const facts = [
    ["data reads", String(ufs.reads)],
    ["latency p50", ufs.latency_p50_ms === null ? "-" : `${ufs.latency_p50_ms} ms`],
    ["latency p99", ufs.latency_p99_ms === null ? "-" : `${ufs.latency_p99_ms} ms`],
    ["last error", ufs.last_error ? `${when(ufs.last_error.at)}: ${ufs.last_error.message}` : "none"],
  ];
  $("ufs").replaceChildren(...facts.flatMap(([k, v]) => {
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    dd.textContent = v;
    return [dt, dd];
  }));
  $("sources").textContent = o.config_sources;
  const f = o.feeds;
  $("feeds").textContent = f.sources.length
    ? `${f.sources.join(", ")}: ${f.received} events received, ${f.applied} applied, ${f.unchanged} already current, ${f.gaps} gaps (each a re-check of what was cached)`
    : "none (outside writes are seen when a sync interval re-checks)";
  showFeedLag(f.lag);
  showS3(o.s3);
}

// Requests and latency per S3 operation since start; in a cluster, the reads of keys another
// worker owns (served by that owner, or here when it could not be reached).
function showS3(s3) {
  const ops = s3.operations;
  const owners = s3.owner_requests;
  const ms = (v) => (v === null ? "-" : `${v} ms`);
  const total = ops.reduce((n, op) => n + op.requests, 0);
  const cluster = Object.keys(owners).length
    ? ` · keys other workers own: ${owners.served || 0} reads served by their owner, ${owners.unreachable || 0} served here (owner unreachable), ${owners.settled || 0} writes applied by their owner`
    : "";
  $("s3-summary").textContent = ops.length
    ? `${total} requests${cluster}`
    : "no S3 requests (the endpoint is on with dora.worker.s3.port)";
  $("s3-ops").hidden = ops.length === 0;
  table("s3-ops", ["operation", "requests", "p50", "p99"], ops.map((op) => (row) => {
    row.className = "s3-operation";
    cell(row, op.operation);
    cell(row, String(op.requests));
    cell(row, ms(op.p50_ms));
    cell(row, ms(op.p99_ms));
  }));
}

// Per source: from each event's own time (the store's clock) to its application here; the bar
// is the last lag against one second.
function showFeedLag(lag) {
  const sources = Object.keys(lag);
  $("feed-lag").hidden = sources.length === 0;
  const ms = (v) => (v === null ? "-" : `${v} ms`);
  table("feed-lag", ["source", "events", "last lag", "p50", "p99", "last, of 1 s"], sources.map((source) => (row) => {
    const l = lag[source];
    row.className = "feed-source";
    cell(row, source, "uri");
    cell(row, String(l.events));
    cell(row, ms(l.last_ms), "last-lag");
    cell(row, ms(l.p50_ms));
    cell(row, ms(l.p99_ms));
    const outer = document.createElement("div");
    outer.className = "bar";
    outer.title = `applied ${when(l.last_at)}`;
    const inner = document.createElement("div");
    inner.style.width = `${Math.min(100, l.last_ms / 10)}%`;
    outer.append(inner);
    cell(row, "").append(outer);
  }));
}

function perInterval(samples, pick) {
  const points = [];
  for (let i = 1; i < samples.length; i += 1) {
    points.push([samples[i].at, pick(samples[i], samples[i - 1])]);
  }
  return points;
}

// The miss-ratio curve: LRU's hit ratio at every capacity, from the pages read since start.
function showAdvice(a) {
  const target = a.capacity_needed_bytes;
  $("advice-summary").textContent = !a.references ? "No page read yet." :
    `${percent(a.target_hit)} hit ratio needs ${target === null ? `more than any capacity (at most ${percent(a.max_hit_ratio)}: the rest are first reads)` : bytes(target)}; ` +
    `at ${bytes(a.capacity_bytes)} (now) LRU would hit ${percent(a.hit_ratio_at_capacity)}. ` +
    `${a.references} page reads, sampled at ${percent(a.sample_rate)}; the evictor is ${a.evictor}, and for a scan-resistant one the curve is a bound.`;
  const points = a.points.map((p) => [p.capacity_bytes, p.hit_ratio]);
  // The axis spans the curve's rise and the target, with room to see it level off (the capacity
  // now may lie far beyond: the summary says it).
  const last = points.length ? points[points.length - 1] : [0, 0];
  const xmax = Math.max(last[0], target || 0, 1) * 1.25;
  if (points.length) points.push([xmax, last[1]]);
  const marks = [{ x: a.capacity_bytes, label: "now", color: "#637083" }];
  if (target !== null) marks.push({ x: target, label: percent(a.target_hit), color: "#2f7d4f" });
  drawCurveChart($("chart-advice"), points, marks, bytes, xmax);
}

async function showCache() {
  const [o, h, a] = await Promise.all([api("/v1/overview"), api("/v1/history"), api("/v1/cache/advice")]);
  showAdvice(a);
  identify(o);
  const s = o.stats, p = o.page_store;
  cards("cache-cards", [
    ["Bytes from cache", bytes(s.bytes_from_cache), "bytes-from-cache"],
    ["Bytes from UFS", bytes(s.bytes_from_ufs), "bytes-from-ufs"],
    ["Hit ratio", percent(ratio(s.page_hits, s.page_misses)), "hit-ratio"],
    ["Pages cached", String(p.pages), "pages-cached"],
    ["Files cached", String(p.files)],
    ["Used", `${bytes(p.used_bytes)} of ${bytes(p.capacity_bytes)}`],
    ["Evictions", String(p.evictions)],
    ["Pinned", `${bytes(p.pinned_bytes)} of ${bytes(p.pin_limit_bytes)}`, "pinned"],
  ]);
  // What the cache policy did (dora cache policy prints the same).
  const c = o.policy, n = (d) => String(c.admission[d] || 0);
  cards("policy-cards", [
    ["Reads admitted", n("admitted"), "admitted"],
    ["Passed through", n("passed_through"), "passed-through"],
    ["Deferred (second read)", n("deferred"), "deferred"],
    ["TTL frees", String(c.ttl_frees), "ttl-frees"],
    ["Quota evictions", String(c.quota_evictions), "quota-evictions"],
  ]);
  const dirs = $("dirs");
  dirs.replaceChildren();
  const t = document.createElement("table");
  for (const d of p.dirs) {
    const row = t.insertRow();
    cell(row, d.path, "uri");
    bar(row, d.capacity_bytes ? d.used_bytes / d.capacity_bytes : 0);
    cell(row, `${bytes(d.used_bytes)} of ${bytes(d.capacity_bytes)}, ${d.files} files`);
    cell(row, d.in_service ? "in service" : "OUT OF SERVICE");
  }
  dirs.append(t);
  // One row per quota rule that has stored a page: its bytes against its limit.
  $("quotas-none").hidden = p.quotas.length > 0;
  table("quotas", ["quota", "used", "", "evictions"], p.quotas.map((q) => (row) => {
    cell(row, q.name, "uri");
    cell(row, `${bytes(q.used_bytes)} of ${bytes(q.limit_bytes)}`);
    bar(row, q.limit_bytes ? q.used_bytes / q.limit_bytes : 0);
    cell(row, String(q.evictions));
  }));
  const samples = h.samples;
  const delta = (key) => (now, before) => Math.max(0, now[key] - before[key]);
  drawLineChart($("chart-hits"), [{
    name: "hit ratio", color: "#2f7d4f",
    // An interval with no page read has no ratio: left out rather than drawn as 0%.
    points: perInterval(samples, (a, b) => ratio(delta("page_hits")(a, b), delta("page_misses")(a, b)))
      .filter((p) => p[1] !== null),
  }], percent);
  drawLineChart($("chart-bytes"), [
    { name: "from cache", color: "#2f7d4f", points: perInterval(samples, delta("bytes_from_cache")) },
    { name: "from UFS", color: "#c0622d", points: perInterval(samples, delta("bytes_from_ufs")) },
  ], bytes);
  const perMinute = (key) => (a, b) => (delta(key)(a, b) * 60) / Math.max(a.at - b.at, 1e-3);
  drawLineChart($("chart-churn"), [
    { name: "evictions/min", color: "#c0622d", points: perInterval(samples, perMinute("page_evictions")) },
    { name: "invalidated pages/min", color: "#2b5da8", points: perInterval(samples, perMinute("pages_invalidated")) },
  ], (v) => v.toFixed(1));
  const m = o.metadata;
  table("meta", ["tier", "entries", "hits", "other"], [
    (r) => { cell(r, "memory"); cell(r, `${m.memory_statuses} statuses, ${m.memory_listings} listings`); cell(r, String(m.memory_hits || 0)); cell(r, `${m.evictions || 0} evicted, ${m.expirations || 0} expired`); },
    (r) => { cell(r, "RocksDB"); cell(r, `${m.metastore_pending || 0} pending writes`); cell(r, String(m.metastore_hits || 0)); cell(r, `${m.metastore_flushes || 0} flushes`); },
    (r) => { cell(r, "UFS"); cell(r, "-"); cell(r, `${m.misses || 0} misses`); cell(r, `${m.ufs_calls || 0} calls, ${m.invalidations || 0} invalidations`); },
  ]);
}

async function showFiles() {
  const { files } = await api("/v1/files/top?limit=25");
  table("top-files", ["file", "reads", "read", "size", "cached"], files.map((f) => (row) => {
    cell(row, f.uri, "uri");
    cell(row, String(f.reads));
    cell(row, bytes(f.bytes_read));
    cell(row, bytes(f.size));
    bar(row, f.cached_fraction);
  }));
}

async function lookUp(event) {
  event.preventDefault();
  const path = $("search-path").value.trim();
  const out = $("search-result");
  if (!path) return;
  try {
    const s = await api(`/v1/status?path=${encodeURIComponent(path)}`);
    const pre = document.createElement("pre");
    const fraction = s.is_dir || !s.size ? "" : ` (${percent(s.cached_bytes / s.size)} cached)`;
    const pinned = s.pinned ? ", pinned" : "";
    pre.textContent = `${s.uri}\nversion ${s.version}\nsize ${bytes(s.size)}, cached ${bytes(s.cached_bytes)}${fraction}${pinned}\n` +
      `modified ${new Date(s.mtime_ns / 1e6).toISOString()}, confirmed ${s.age_ms ?? "-"} ms ago`;
    out.replaceChildren(pre);
  } catch (error) {
    if (error instanceof Unauthorized) throw error;
    const p = document.createElement("p");
    p.className = "error";
    p.textContent = error.message;
    out.replaceChildren(p);
  }
}

async function showJobs() {
  const { jobs } = await api("/v1/jobs");
  table("jobs", ["job", "path", "state", "progress", "files", "bytes", ""], jobs.reverse().map((j) => (row) => {
    row.dataset.job = j.id;
    cell(row, j.id);
    cell(row, j.path, "uri");
    cell(row, j.state, `state-${j.state}`);
    const total = j.metadata_only ? j.files_total : j.bytes_total;
    const done = j.metadata_only ? j.files_done : j.bytes_done;
    bar(row, j.state === "done" ? 1 : total ? done / total : 0);
    cell(row, `${j.files_done}/${j.files_total}${j.files_failed ? `, ${j.files_failed} failed` : ""}`);
    cell(row, bytes(j.bytes_done));
    const td = cell(row, "");
    if (j.state === "queued" || j.state === "running") {
      const button = document.createElement("button");
      button.textContent = "Cancel";
      button.className = "cancel";
      button.onclick = () => act(() => api(`/v1/load/${encodeURIComponent(j.id)}`, { method: "DELETE" }));
      td.append(button);
    }
  }));
}

async function startLoad(event) {
  event.preventDefault();
  const path = $("load-path").value.trim();
  const recursive = $("load-recursive").checked;
  await act(() => api(`/v1/load?path=${encodeURIComponent(path)}&recursive=${recursive}`, { method: "POST" }));
}

async function showCluster() {
  const c = await api("/v1/cluster");
  if (!c.cluster) {
    $("cluster-summary").textContent = c.error ? `etcd: ${c.error}` : "This worker is not in a cluster (no dora.cluster.etcd.endpoints).";
    table("workers", [], []);
    return;
  }
  const online = c.workers.filter((w) => w.online).length;
  $("cluster-summary").textContent = `cluster ${c.cluster}: ${online} of ${c.workers.length} workers online, feed at revision ${c.feed_revision}`;
  table("workers", ["worker", "status", "capacity", "hit ratio", "feed lag", "served from cache"], c.workers.map((w) => (row) => {
    row.className = "worker";
    const td = cell(row, "");
    const link = document.createElement("a");
    link.href = w.console;
    link.textContent = w.address;
    td.append(link);
    cell(row, w.online ? "online" : "offline");
    cell(row, bytes(w.capacity_bytes));
    cell(row, w.stats_error ? "unreachable" : percent(w.hit_ratio));
    cell(row, w.lag === null ? "-" : String(w.lag));
    cell(row, w.stats ? bytes(w.stats.bytes_from_cache) : "-");
  }));
}

// -- navigation, refresh, login ---------------------------------------------------------------

const VIEWS = { overview: showOverview, cache: showCache, files: showFiles, jobs: showJobs, cluster: showCluster };
let current = "overview";

function showError(message) {
  $("error").hidden = !message;
  $("error").textContent = message || "";
}

async function refresh() {
  try {
    await VIEWS[current]();
    showError("");
  } catch (error) {
    if (error instanceof Unauthorized) return askForToken(sessionStorage.getItem(TOKEN_KEY) ? "The token was refused." : "");
    showError(error.message);
  }
}

async function act(call) {
  try {
    await call();
    await refresh();
  } catch (error) {
    if (error instanceof Unauthorized) return askForToken("The token was refused.");
    showError(error.message);
  }
}

function askForToken(message) {
  $("login").hidden = false;
  document.querySelector("main").hidden = true;
  $("login-error").textContent = message;
}

function select(view) {
  current = VIEWS[view] ? view : "overview";
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== `view-${current}`;
  for (const link of document.querySelectorAll("#tabs a")) link.classList.toggle("active", link.dataset.view === current);
  refresh();
}

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value);
  $("token").value = "";
  $("login").hidden = true;
  document.querySelector("main").hidden = false;
  $("logout").hidden = false;
  refresh();
});
$("logout").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); location.reload(); });
$("logout").hidden = !sessionStorage.getItem(TOKEN_KEY);
$("search").addEventListener("submit", (event) => lookUp(event).catch(() => askForToken("The token was refused.")));
$("load-form").addEventListener("submit", startLoad);
window.addEventListener("hashchange", () => select(location.hash.slice(1)));
select(location.hash.slice(1));
setInterval(refresh, REFRESH_MS);
