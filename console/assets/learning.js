// Learning: each learned procedure (competence) and plan graph, with its
// success rate over time (from its versions: every use is a revision of its
// performance counts), the episodes it was learned from, its conditions,
// alternatives and fallbacks, and its revisions (drift shows as a
// retraction and a successor that supersedes it). Below the list, the
// learning curves of the last evaluation (engram-eval's curve.json, which
// engramd serves at /console/eval.json when console.eval_report names it).

import { get } from "./api.js";
import { h, lineChart } from "./chart.js";
import { href as recordHref, payloadView, short, summary, when } from "./records.js";

const href = (id) => `#/learning/${id}`;

export async function render(el, ctx) {
  if (ctx.params[0]) return detail(el, ctx.params[0]);
  el.append(h("h1", {}, "Learning"));
  const [page, curves] = await Promise.all([get("/v1/records", { type: ["competence", "plan_graph"], status: "all", limit: 1000 }), evalCurves()]);
  if (!page.records.length) {
    el.append(h("p", { class: "empty" }, "Nothing learned yet: procedures and plans appear here once consolidation has seen a task solved the same way more than once."));
  } else {
    el.append(learned(page));
  }
  el.append(evaluation(curves));
}

// RATE_NOTE states the one success rate engram uses everywhere
// (memory.SuccessRate): retrieval ranks by it; engram procedures, SKILL.md,
// GET /v1/stats/health and this console print it.
export const RATE_NOTE = "Success rate is smoothed, (successes + 1) / (uses + 2), as retrieval ranks by it and engram procedures, SKILL.md and the Health page show it: 3 of 3 is 0.80, so a few uses never read as certain.";

// state is a record's lifecycle word as the CLI prints it: probation for an
// active procedure still on trial, else its status.
export const state = (r) => (r.status === "active" && (r.tags || []).includes("probation") ? "probation" : r.status);

// rateText is a success rate as engram procedures prints it: 0.80 (3/3).
const rateText = (p) => (p.rate === null ? "–" : `${p.rate.toFixed(2)} (${p.s}/${p.s + p.f})`);

function learned(page) {
  return h("div", {}, h("table", { class: "rows" }, h("caption", {}, "Learned procedures and plans"),
    h("thead", {}, h("tr", {}, ["Learned", "Type", "State", "Successes", "Failures", "Success rate", "Updated"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, page.records.map((r) => {
      const p = perf(r);
      return h("tr", { "data-id": r.id, "data-type": r.type, "data-status": r.status, "data-state": state(r) },
        h("td", {}, h("a", { href: href(r.id) }, summary(r))), h("td", {}, r.type), h("td", {}, state(r)),
        h("td", { class: "num" }, p.s), h("td", { class: "num" }, p.f), h("td", { class: "num", "data-rate": p.rate ?? "" }, rateText(p)),
        h("td", {}, when(r.updated_at)));
    }))), h("p", { class: "note", id: "rate-note" }, RATE_NOTE));
}

// evalCurves fetches the last evaluation's curves: null when there is
// none (404). Like the assets, they need no key: a simulated world's.
async function evalCurves() {
  const res = await fetch("eval.json", { headers: { Accept: "application/json" } });
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`evaluation report: HTTP ${res.status}`);
  return res.json();
}

// evaluation draws the curves, one series per agent over the windows of
// episodes, with the command and the date that made them.
function evaluation(c) {
  const sec = h("section", { class: "evaluation", "data-eval": c ? "shown" : "none" }, h("h2", {}, "Learning curve of the last evaluation"));
  if (!c) {
    sec.append(h("p", { class: "note" }, "No evaluation report: ", h("code", {}, "make eval"),
      " measures learning in a simulated world and writes docs/eval/curve.json, which ", h("code", {}, "make run"), " shows here."));
    return sec;
  }
  // Every agent meets the same episodes, so the windows are shared; an
  // agent's missing window is a gap.
  const froms = [...new Set(c.agents.flatMap((a) => a.points.map((p) => p.from)))].sort((a, b) => a - b);
  const to = {};
  for (const a of c.agents) for (const p of a.points) to[p.from] = p.to;
  const labels = froms.map((f) => `${f}–${to[f] - 1}`);
  const series = c.agents.map((a) => {
    const rate = new Map(a.points.map((p) => [p.from, p.rate]));
    return { name: a.agent, label: a.agent, values: froms.map((f) => rate.get(f) ?? null) };
  });
  const phases = [];
  if (c.drift_at > 0) phases.push(`the drifted problems' fixes change from episode ${c.drift_at}`);
  if (c.deployment > 0) phases.push(`episodes ${c.episodes}–${c.episodes + c.deployment - 1} are deployment, memory frozen`);
  sec.append(lineChart({ id: "eval-curve", title: `Success rate per window of ${c.window} episodes (seed ${c.seed})`, format: "percent",
    xTitle: "Episodes", labels, series,
    note: `x: a window of ${c.x}s; y: its ${c.y}, the share of its episodes that succeeded` + (phases.length ? `; ${phases.join("; ")}.` : ".") }),
  h("p", { class: "note", "data-made": c.made }, `Made ${when(c.made)} by `, h("code", {}, c.command), "."));
  return sec;
}

// perf reads a procedure's or plan's success counts.
function perf(r) {
  const p = r.payload || {};
  const pf = p.performance || {};
  const m = p.metrics || {};
  const s = pf.successes ?? m.successes ?? 0, f = pf.failures ?? m.failures ?? 0;
  return { s, f, rate: s + f ? (s + 1) / (s + f + 2) : null };
}

async function detail(el, id) {
  const [r, hist, rel] = await Promise.all([get(`/v1/records/${id}`), get(`/v1/records/${id}/history`), get(`/v1/records/${id}/relations`)]);
  el.dataset.id = r.id;
  el.append(h("p", {}, h("a", { href: "#/learning" }, "← Learning")),
    h("h1", {}, summary(r), h("span", { class: `badge ${r.status}`, "data-status": r.status, "data-state": state(r) }, state(r))),
    h("p", {}, h("a", { href: recordHref(r.id) }, "Record page"), ` · ${r.type} · version ${r.version}`));

  // Success rate over time: one point per version whose counts changed.
  const pts = [];
  let last = "";
  for (const v of hist.versions) {
    const p = perf(v.record);
    const k = `${p.s}/${p.f}`;
    if (k === last || p.rate === null) continue;
    last = k;
    pts.push({ x: `v${v.version}`, y: p.rate, at: when(v.recorded_at) });
  }
  el.append(lineChart({ id: "success-rate", title: "Success rate over time", format: "rate", xTitle: "Version",
    note: (pts.length ? `One point per version that changed its counts, ${pts[0].at} to ${pts[pts.length - 1].at}. ` : "") + RATE_NOTE,
    labels: pts.map((p) => p.x), series: [{ name: "success_rate", label: "success rate", values: pts.map((p) => p.y) }] }));

  el.append(h("h2", {}, "What it says"), payloadView(r));

  const out = rel.relations.filter((e) => e.source_id === r.id), inc = rel.relations.filter((e) => e.target_id === r.id);
  const sources = out.filter((e) => e.predicate === "derived_from").map((e) => e.target_id);
  const eps = await Promise.all(sources.slice(0, 20).map((s) => get(`/v1/records/${s}`).catch(() => null)));
  el.append(h("h2", {}, `Learned from (${sources.length})`),
    sources.length ? h("ul", { class: "sources" }, sources.map((s, i) => h("li", { "data-episode": s },
      h("a", { href: recordHref(s) }, short(s)), eps[i] ? ` ${eps[i].type} · ${when(eps[i].created_at)} · ${summary(eps[i])}` : ""))) : h("p", { class: "empty" }, "No source episodes recorded."));

  // Alternatives: other procedures for one of its signals, or other
  // versions of its plan.
  const p = r.payload || {};
  let alts = [];
  if (r.type === "competence") {
    const signals = new Set((p.triggers || []).map((t) => t.signal));
    const all = await get("/v1/records", { type: "competence", limit: 1000 });
    alts = all.records.filter((o) => o.id !== r.id && (o.payload.triggers || []).some((t) => signals.has(t.signal)));
  } else {
    const all = await get("/v1/records", { type: "plan_graph", limit: 1000 });
    alts = all.records.filter((o) => o.id !== r.id && o.payload.plan_id === p.plan_id);
  }
  el.append(h("h2", {}, "Alternatives"), alts.length ? h("ul", {}, alts.map((a) => h("li", { "data-alternative": a.id },
    h("a", { href: href(a.id) }, summary(a)), ` — ${a.status}, when ${(a.payload.triggers || []).map((t) => JSON.stringify(t.conditions || {})).join("; ")}`)))
    : h("p", { class: "empty" }, "None: it is the only one for its signals."));

  const revs = [...out.filter((e) => e.predicate === "supersedes").map((e) => ({ rel: "supersedes", id: e.target_id })),
    ...inc.filter((e) => e.predicate === "supersedes").map((e) => ({ rel: "superseded by", id: e.source_id })),
    ...inc.filter((e) => e.predicate === "forked_from").map((e) => ({ rel: "forked into", id: e.source_id })),
    ...out.filter((e) => e.predicate === "forked_from").map((e) => ({ rel: "forked from", id: e.target_id }))];
  el.append(h("h2", {}, "Revisions"), h("ol", { class: "versions" }, hist.versions.map((v) => h("li", { "data-version": v.version },
    `v${v.version} ${when(v.recorded_at)} — ${v.record.status}`))),
  revs.length ? h("ul", { class: "revisions" }, revs.map((x) => h("li", { "data-relation": x.rel }, `${x.rel} `, h("a", { href: href(x.id) }, short(x.id)))))
    : h("p", { class: "note" }, "Neither superseded nor forked: drift would show here as a retraction and the successor that supersedes it."));
}
