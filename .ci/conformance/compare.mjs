// Compares MCP conformance results (server mode) of one upstream run
// directly and through the hybridctx proxy. Usage:
//   node compare.mjs LABEL=DIR LABEL=DIR ...   (the first is the direct run)
// Prints a Markdown table (scenarios, checks passed per run) and exits 1
// when a check that passed in the first run did not pass in another.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

function load(dir) {
  const out = new Map(); // scenario -> Map(check id -> status)
  for (const d of readdirSync(dir)) {
    const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(d);
    if (!m) continue;
    let checks = [];
    try { checks = JSON.parse(readFileSync(join(dir, d, "checks.json"), "utf8")); } catch { checks = []; }
    const byId = new Map();
    for (const c of checks) byId.set(c.id, c.status);
    out.set(m[1], byId);
  }
  return out;
}

const runs = process.argv.slice(2).map((a) => {
  const i = a.indexOf("=");
  return { label: a.slice(0, i), res: load(a.slice(i + 1)) };
});
if (runs.length < 2) { console.error("usage: node compare.mjs LABEL=DIR LABEL=DIR..."); process.exit(2); }
const base = runs[0];
const count = (res) => {
  let pass = 0, total = 0, scen = 0;
  for (const checks of res.values()) {
    scen++;
    for (const s of checks.values()) { total++; if (s === "SUCCESS") pass++; }
  }
  return { pass, total, scen };
};
console.log("| run | scenarios | checks passed |");
console.log("|---|---|---|");
for (const r of runs) {
  const c = count(r.res);
  console.log(`| ${r.label} | ${c.scen} | ${c.pass} / ${c.total} |`);
}
let lost = 0;
for (const [scen, checks] of base.res) {
  for (const [id, status] of checks) {
    if (status !== "SUCCESS") continue;
    for (const r of runs.slice(1)) {
      const got = r.res.get(scen)?.get(id) ?? "MISSING";
      if (got !== "SUCCESS") {
        console.error(`conformance: ${scen}/${id} passes ${base.label} but is ${got} ${r.label}`);
        lost++;
      }
    }
  }
}
if (count(base.res).pass === 0) { console.error("conformance: nothing passed directly"); process.exit(1); }
process.exit(lost === 0 ? 0 : 1);
