// The page of `hybridctx ui` (docs/ui.md): plain JavaScript over the JSON
// API under /api/, no framework and no build step. Routes live in the URL
// fragment: #/runs, #/runs/<id>, #/artifacts, #/artifacts/<hex>.
"use strict";

// A token given as #token=… (a listener off loopback) is kept for this tab
// only and taken out of the address bar.
(function takeToken() {
  const m = location.hash.match(/^#token=([^&]+)/);
  if (m) {
    sessionStorage.setItem("hybridctx-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + "#/runs");
  }
})();

const $ = (sel, el = document) => el.querySelector(sel);
const main = $("#main");

function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function num(n) { return Number(n).toLocaleString("en-US"); }
function bytes(n) {
  if (n < 1000) return n + " bytes";
  const u = ["KB", "MB", "GB"]; let v = n, i = -1;
  do { v /= 1000; i++; } while (v >= 1000 && i < 2);
  return v.toFixed(1) + " " + u[i];
}

async function api(path) {
  const headers = {};
  const tok = sessionStorage.getItem("hybridctx-token");
  if (tok) headers.Authorization = "Bearer " + tok;
  const r = await fetch(path, { headers });
  const body = await r.json().catch(() => ({ error: "the answer is not JSON" }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function fail(err) { main.innerHTML = `<p class="warn" id="error">${esc(err.message)}</p>`; }

function route() {
  const h = location.hash || "#/runs";
  document.querySelectorAll("header nav a").forEach(a => a.classList.toggle("on", h.startsWith(a.getAttribute("href"))));
  let m;
  if ((m = h.match(/^#\/runs\/(.+)$/))) return showRun(decodeURIComponent(m[1])).catch(fail);
  if ((m = h.match(/^#\/artifacts\/([0-9a-f]{64})$/))) return showReader(m[1]).catch(fail);
  if (h.startsWith("#/artifacts")) return showArtifacts().catch(fail);
  return showRuns().catch(fail);
}
window.addEventListener("hashchange", route);

// ---- Runs -------------------------------------------------------------

async function showRuns() {
  const v = await api("/api/runs");
  let html = `<h2>Runs</h2>`;
  if (!v.events_file) html += `<p class="card muted" id="no-events">No events file: start <code>hybridctx ui --events FILE</code> with the file your runs append to.</p>`;
  else if (!v.present) html += `<p class="card muted" id="no-events">The events file does not exist yet: it fills as commands run with <code>--events</code>.</p>`;
  else html += `<p class="muted">${num(v.lines)} lines, ${v.runs.length} runs.</p>`;
  if (v.bad_lines > 0) {
    html += `<p class="card warn" id="bad-lines">${num(v.bad_lines)} bad ${v.bad_lines === 1 ? "line" : "lines"} skipped: ` +
      v.bad.map(b => `line ${b.line} (${esc(b.reason)})`).join(", ") + (v.bad_lines > v.bad.length ? ", …" : "") + `</p>`;
  }
  if (v.runs.length) {
    html += `<table id="runs"><tr><th>run</th><th>last event</th><th class="num">decisions</th><th class="num">agents</th><th class="num">kept out of context</th><th class="num">rehydrated</th></tr>` +
      v.runs.map(r => `<tr><td class="mono"><a href="#/runs/${encodeURIComponent(r.run_id)}">${esc(r.run_id)}</a></td><td class="mono">${esc(r.last_time)}</td>` +
        `<td class="num">${num(r.decisions)}</td><td class="num">${r.agents}</td><td class="num">${bytes(r.bytes_kept_out_of_context)}</td><td class="num">${bytes(r.bytes_rehydrated)}</td></tr>`).join("") + `</table>`;
  }
  main.innerHTML = html;
}

async function showRun(id) {
  const r = await api("/api/runs/" + encodeURIComponent(id));
  main.innerHTML = `<h2>Run <span class="mono">${esc(r.run_id)}</span></h2>
    <p class="muted">${esc(r.first_time)} – ${esc(r.last_time)}</p>
    <div class="card"><div class="sentence" id="sentence">${esc(r.economy.sentence)}</div>${chart(r)}</div>
    <div class="card"><h3>Summary</h3><pre id="summary">${esc(r.summary_text.join("\n"))}</pre></div>
    <div class="card tree" id="agents"><h3>Agents</h3>${tree(r.agents)}</div>
    <div class="card" id="steps"><h3>History budget: compaction steps</h3>${steps(r)}</div>
    <div class="card"><h3>Decisions</h3>
      <div class="pager"><select id="tl-outcome"><option value="">every outcome</option>${Object.keys(r.summary.outcomes).map(o => `<option>${esc(o)}</option>`).join("")}</select></div>
      <div id="timeline"></div></div>`;
  $("#tl-outcome").onchange = () => timeline(id, 0).catch(fail);
  timeline(id, 0);
}

function chart(r) {
  const e = r.economy, n = e.seq.length;
  if (!n) return `<p class="muted">No decisions.</p>`;
  const W = 860, H = 190, P = 44, top = Math.max(1, e.kept[n - 1], e.read[n - 1]);
  const step = Math.max(1, Math.floor(n / 1000));
  const x = i => P + (n === 1 ? 0 : (i / (n - 1)) * (W - P - 10));
  const y = v => H - 22 - (v / top) * (H - 40);
  const line = arr => { const pts = []; for (let i = 0; i < n; i += step) pts.push(x(i).toFixed(1) + "," + y(arr[i]).toFixed(1)); pts.push(x(n - 1).toFixed(1) + "," + y(arr[n - 1]).toFixed(1)); return pts.join(" "); };
  const marks = r.compaction_steps.map(s => { const i = Math.max(0, s.at); const cls = s.invalidates_cached_prefix ? "step invalidates" : "step";
    return `<line class="${cls}" x1="${x(i)}" x2="${x(i)}" y1="14" y2="${H - 22}"><title>${esc(stepText(s))}</title></line>`; }).join("");
  return `<svg id="chart" viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="bytes kept out of the context over the run's decisions">
    <line x1="${P}" x2="${W - 10}" y1="${H - 22}" y2="${H - 22}" stroke="#d9dee7"/>
    <text x="${P - 4}" y="${y(top) + 4}" text-anchor="end">${esc(bytes(top))}</text><text x="${P - 4}" y="${H - 18}" text-anchor="end">0</text>
    <text x="${P}" y="${H - 4}">decision 1</text><text x="${W - 10}" y="${H - 4}" text-anchor="end">decision ${num(n)}</text>
    ${marks}<polyline class="kept" points="${line(e.kept)}"/><polyline class="read" points="${line(e.read)}"/></svg>
    <div class="legend muted"><span style="color:#2459c9">— kept out of context</span><span style="color:#d97706">— read back</span><span style="color:#9333ea">┆ compaction step, cached prefix invalidated</span><span class="muted">┆ compaction step, cached prefix kept</span></div>`;
}

function tree(nodes) {
  if (!nodes.length) return `<p class="muted">No agents.</p>`;
  return `<ul>` + nodes.map(a => `<li><span class="mono">${esc(a.agent)}</span> <span class="muted">depth ${a.depth} · ${num(a.decisions)} decisions · ${bytes(a.bytes_kept_out_of_context)} kept out</span>${a.children.length ? tree(a.children) : ""}</li>`).join("") + `</ul>`;
}

// size renders a step's before or after size (null when the step was
// approximated from decisions).
function size(h) { return h ? `${bytes(h.bytes)} · ${num(h.tokens)} tokens` : "–"; }
function budget(s) { return s.over_budget ? `over budget (${esc(s.shortfall)})` : s.stepped ? "within budget" : "under budget"; }
function stepText(s) {
  return `compaction step #${s.seq} (${s.agent}): ${s.before ? size(s.before) + " → " + size(s.after) + ", " : ""}` +
    `${s.results_masked} results and ${s.inputs_masked} inputs masked, cached prefix ${s.invalidates_cached_prefix ? "invalidated" : "kept"}, ${budget(s)}`;
}

function steps(r) {
  const list = r.compaction_steps;
  if (!list.length) return `<p class="muted">No compaction step in this run.</p>`;
  const note = r.compaction_steps_from === "history_budget" ? `<p class="muted" id="steps-approx">This events file has no compaction events: each step is approximated from the results the history budget masked.</p>` : "";
  return note + `<table><tr><th class="num">#</th><th>agent</th><th class="num">before</th><th class="num">after</th><th class="num">results masked</th><th class="num">inputs masked</th><th>cached prefix</th><th>budget</th></tr>` +
    list.map(s => `<tr><td class="num">${s.first_seq ? s.first_seq + "–" : ""}${s.seq}</td><td class="mono">${esc(s.agent)}</td><td class="num">${size(s.before)}</td><td class="num">${size(s.after)}</td>` +
      `<td class="num">${s.results_masked}</td><td class="num">${s.inputs_masked}</td><td>${s.invalidates_cached_prefix ? "invalidated" : "kept"}</td><td class="${s.over_budget ? "warn" : ""}">${budget(s)}</td></tr>`).join("") + `</table>`;
}

async function timeline(id, offset) {
  const el = $("#timeline");
  const outcome = $("#tl-outcome") ? $("#tl-outcome").value : "";
  const p = await api(`/api/runs/${encodeURIComponent(id)}/decisions?` + new URLSearchParams({ offset, limit: 100, outcome }));
  // The compaction steps among this page's decisions, by sequence.
  const stepRow = s => `<tr class="step${s.invalidates_cached_prefix ? " invalidates" : ""}"><td class="num">${s.seq}</td><td class="mono">${esc(s.time.slice(11, 23))}</td><td class="mono">${"· ".repeat(s.depth)}${esc(s.agent)}</td><td colspan="6">${esc(stepText(s))}</td></tr>`;
  let k = 0;
  const before = seq => { let h = ""; while (k < p.compaction_steps.length && p.compaction_steps[k].seq < seq) h += stepRow(p.compaction_steps[k++]); return h; };
  const rows = p.decisions.map(d => before(d.seq) + `<tr><td class="num">${d.seq}</td><td class="mono">${esc(d.time.slice(11, 23))}</td><td class="mono">${"· ".repeat(d.depth)}${esc(d.agent)}</td>` +
    `<td>${esc(d.operation)}${d.view ? " (" + esc(d.view) + ")" : ""}</td><td class="outcome-${esc(d.outcome)}">${esc(d.outcome)}</td><td>${esc(d.reason)}</td>` +
    `<td class="num">${d.observed_bytes == null ? "–" : num(d.observed_bytes)}</td><td class="num">${d.kept_bytes ? num(d.kept_bytes) : ""}</td>` +
    `<td class="mono">${d.reference ? `<a href="#/artifacts/${d.reference.slice(18)}">${d.reference.slice(18, 30)}…</a>` : ""}</td></tr>`).join("") + before(Infinity);
  el.innerHTML = pager(p.offset, p.decisions.length, p.total, "tl") +
    `<table><tr><th class="num">#</th><th>time</th><th>agent</th><th>operation</th><th>outcome</th><th>reason</th><th class="num">bytes</th><th class="num">kept out</th><th>reference</th></tr>${rows}</table>`;
  wirePager(el, "tl", p, o => timeline(id, o));
}

function pager(offset, count, total, key) {
  return `<div class="pager"><button id="${key}-prev" ${offset === 0 ? "disabled" : ""}>◀ previous</button>` +
    `<span id="${key}-info">${total ? num(offset + 1) : 0}–${num(offset + count)} of ${num(total)}</span>` +
    `<button id="${key}-next" ${offset + count >= total ? "disabled" : ""}>next ▶</button></div>`;
}
function wirePager(el, key, p, go) {
  $("#" + key + "-prev", el).onclick = () => go(Math.max(0, p.offset - 100));
  $("#" + key + "-next", el).onclick = () => go(p.offset + 100);
}

// ---- Artifacts --------------------------------------------------------

const list = { sort: "last_used_at", order: "desc", kind: "", q: "", offset: 0 };

async function showArtifacts() {
  if (!$("#artifacts")) {
    main.innerHTML = `<h2>Artifacts</h2><div class="pager">
      <input id="filter" placeholder="filter: digest or tool" value="${esc(list.q)}">
      <select id="kind"><option value="">every kind</option><option>text</option><option>json</option><option>binary</option></select></div>
      <div id="artifacts"></div>`;
    $("#kind").value = list.kind;
    let t;
    $("#filter").oninput = e => { clearTimeout(t); t = setTimeout(() => { list.q = e.target.value; list.offset = 0; loadArtifacts().catch(fail); }, 200); };
    $("#kind").onchange = e => { list.kind = e.target.value; list.offset = 0; loadArtifacts().catch(fail); };
  }
  return loadArtifacts();
}

async function loadArtifacts() {
  const qs = new URLSearchParams({ sort: list.sort, order: list.order, kind: list.kind, q: list.q, offset: list.offset, limit: 100 });
  const p = await api("/api/artifacts?" + qs);
  const el = $("#artifacts");
  const head = (k, label, cls = "") => `<th class="sort ${cls}" data-sort="${k}">${label}${list.sort === k ? (list.order === "asc" ? " ▲" : " ▼") : ""}</th>`;
  el.innerHTML = pager(p.offset, p.artifacts.length, p.total, "art") +
    `<table id="artifacts-table"><tr><th>reference</th>${head("size", "size", "num")}${head("kind", "kind")}${head("created_at", "first use")}${head("last_used_at", "last use")}${head("tool", "tool")}</tr>` +
    p.artifacts.map(a => `<tr><td class="mono"><a href="#/artifacts/${a.digest}">${a.digest.slice(0, 16)}…</a></td><td class="num">${num(a.size)}</td><td>${esc(a.kind)}</td>` +
      `<td class="mono">${esc(a.created_at.slice(0, 19))}</td><td class="mono">${esc(a.last_used_at.slice(0, 19))}</td><td>${esc(a.tool)}</td></tr>`).join("") + `</table>` +
    (p.total === 0 ? `<p class="muted" id="no-artifacts">No artifacts for this owner${list.q || list.kind ? " match the filter" : ""}.</p>` : "");
  el.querySelectorAll("th.sort").forEach(th => th.onclick = () => {
    const k = th.dataset.sort;
    list.order = list.sort === k && list.order === "desc" ? "asc" : "desc"; list.sort = k; list.offset = 0;
    loadArtifacts().catch(fail);
  });
  wirePager(el, "art", p, o => { list.offset = o; loadArtifacts().catch(fail); });
}

// ---- Reader -----------------------------------------------------------

const BUDGET = 65536;

async function showReader(hex) {
  main.innerHTML = `<h2>Artifact <span class="mono">${hex.slice(0, 16)}…</span></h2>
    <p class="muted mono">artifact://sha256/${hex}</p>
    <div class="tabs pager"><button data-t="lines" class="on">Lines</button><button data-t="search">Search</button><button data-t="query">jq</button>
      <span class="muted">each read is a rehydration: owner, digest and budget checked, one event</span></div>
    <div id="tool"></div><div class="card"><div id="status" class="muted"></div><div id="out"></div></div>`;
  document.querySelectorAll(".tabs button").forEach(b => b.onclick = () => {
    document.querySelectorAll(".tabs button").forEach(x => x.classList.toggle("on", x === b));
    tools[b.dataset.t](hex);
  });
  tools.lines(hex);
}

function status(r, extra = "") {
  const ok = r.outcome === "resolved";
  $("#status").innerHTML = `<span id="outcome" class="outcome-${esc(r.outcome)}">${esc(r.outcome)}</span> / <span id="reason">${esc(r.reason)}</span>` +
    (r.body_size ? ` · body ${num(r.body_size)} bytes` : "") + (ok && r.summary ? ` · <span id="page-summary">${esc(r.summary)}</span>` : "") + extra;
  if (!ok) $("#out").innerHTML = `<p class="warn" id="refused">${esc(explain[r.outcome] || "The read was refused.")}</p>`;
  return ok;
}

const explain = {
  missing: "The record exists but its body is gone from the workspace.",
  stale: "The stored body no longer matches its reference: nothing of it was shown.",
  unauthorized: "This owner has no record of the reference.",
  over_budget: "The answer does not fit the read's budget.",
  view_failed: "The view could not answer (not JSON, the filter failed, or a limit).",
  invalid_reference: "Not a reference.",
};

const tools = {
  async lines(hex, start = 1) {
    $("#tool").innerHTML = `<div class="pager">from line <input id="start" type="number" min="1" value="${start}" style="width:8em"><button id="go">read</button></div>`;
    $("#go").onclick = () => tools.lines(hex, Math.max(1, +$("#start").value || 1));
    const r = await api(`/api/artifacts/${hex}/lines?start=${start}&count=200&budget=${BUDGET}`);
    if (!status(r, r.total ? ` · lines ${num(r.first)}–${num(r.first + r.count - 1)} of ${num(r.total)}` : "")) return;
    const lines = r.text.replace(/\n$/, "").split("\n");
    $("#out").innerHTML = `<div class="lines mono" id="lines">` + lines.map((l, i) => `<span class="ln">${r.first + i}</span><pre>${esc(l)}</pre>`).join("") + `</div>` +
      (r.next ? `<div class="pager"><button id="more">next lines ▶</button></div>` : "");
    if (r.next) $("#more").onclick = () => tools.lines(hex, r.next);
  },
  async search(hex, skip = 0) {
    if (!$("#pattern")) {
      $("#tool").innerHTML = `<form class="pager" id="search-form"><input id="pattern" placeholder="pattern" size="40">
        <label><input type="checkbox" id="regex"> regex</label><label><input type="checkbox" id="icase"> ignore case</label>
        <label>context <input type="number" id="context" min="0" max="10" value="2" style="width:4em"></label>
        <button>search</button></form>`;
      $("#out").innerHTML = ""; $("#status").innerHTML = "";
      $("#search-form").onsubmit = e => { e.preventDefault(); tools.search(hex, 0).catch(fail); };
      return;
    }
    const pat = $("#pattern").value, rx = $("#regex").checked, ic = $("#icase").checked;
    const qs = new URLSearchParams({ pattern: pat, regex: rx ? 1 : 0, ignore_case: ic ? 1 : 0, context: $("#context").value || 0, skip, max: 50, budget: BUDGET });
    const r = await api(`/api/artifacts/${hex}/search?` + qs);
    if (!status(r)) return;
    let re = null;
    try { re = new RegExp(rx ? pat : pat.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), ic ? "gi" : "g"); } catch (_) { re = null; }
    const mark = t => {
      if (!re) return esc(t);
      let out = "", last = 0;
      for (const m of t.matchAll(re)) { if (!m[0]) break; out += esc(t.slice(last, m.index)) + "<mark>" + esc(m[0]) + "</mark>"; last = m.index + m[0].length; }
      return out + esc(t.slice(last));
    };
    const rows = r.text.replace(/\n$/, "").split("\n").filter(l => l !== "").map(l => {
      const m = l.match(/^(\d+)([:-])(.*)$/s);
      return m ? `<span class="ln${m[2] === ":" ? " hit" : ""}">${m[1]}</span><pre class="${m[2] === ":" ? "hit" : "ctx"}">${m[2] === ":" ? mark(m[3]) : esc(m[3])}</pre>` : `<span class="ln"></span><pre>${esc(l)}</pre>`;
    });
    $("#out").innerHTML = `<div class="lines mono" id="matches">${rows.join("")}</div>` +
      `<div class="pager"><button id="prev-m" ${skip ? "" : "disabled"}>◀ previous</button><button id="next-m" ${r.next ? "" : "disabled"}>next matches ▶</button></div>`;
    $("#prev-m").onclick = () => tools.search(hex, Math.max(0, skip - 50)).catch(fail);
    $("#next-m").onclick = () => tools.search(hex, r.next).catch(fail);
  },
  async query(hex, skip = 0) {
    if (!$("#filter-q")) {
      $("#tool").innerHTML = `<div class="card"><h3>Shape</h3><pre id="shape" class="muted">…</pre></div>
        <form class="pager" id="query-form"><input id="filter-q" placeholder="jq filter, e.g. .items[] | .id" size="50" value="."><button>run</button></form>`;
      $("#out").innerHTML = ""; $("#status").innerHTML = "";
      $("#query-form").onsubmit = e => { e.preventDefault(); tools.query(hex, 0).catch(fail); };
      const s = await api(`/api/artifacts/${hex}/shape?budget=${BUDGET}`);
      $("#shape").textContent = s.outcome === "resolved" ? pretty(s.text) : s.outcome + " / " + s.reason;
      return;
    }
    const qs = new URLSearchParams({ filter: $("#filter-q").value, skip, budget: BUDGET });
    const r = await api(`/api/artifacts/${hex}/query?` + qs);
    if (!status(r)) return;
    $("#out").innerHTML = `<pre id="results">${esc(r.text)}</pre>` + (r.next ? `<div class="pager"><button id="next-r">next results ▶</button></div>` : "");
    if (r.next) $("#next-r").onclick = () => tools.query(hex, r.next).catch(fail);
  },
};

function pretty(t) { try { return JSON.stringify(JSON.parse(t), null, 2); } catch (_) { return t; } }

route();
