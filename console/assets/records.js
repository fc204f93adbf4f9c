// Records: a browser over GET /v1/records and its filters, and a record's
// page: its payload, readable by type; its versions as diffs; audit;
// provenance; relations as a small graph; and its salience curve.

import { get } from "./api.js";
import { fmt, h, lineChart, relationGraph } from "./chart.js";

const TYPES = ["episodic", "working", "semantic", "competence", "plan_graph"];
const STATUSES = ["active", "contested", "superseded", "retracted", "merged", "deleted", "expired", "all"];
const SENSITIVITIES = ["public", "low", "medium", "high", "hyper"];
const filters = { type: "", status: "", sensitivity: "", tag: "", scope: "", subject: "", predicate: "", limit: "50" };

export const href = (id) => `#/records/${id}`;
// short is an id for people: its last 8 hex digits (a UUIDv7 begins with
// its time, which records written together share).
export const short = (id) => id.slice(-8);
// when is a time as the CLI prints it, in UTC and saying so: 2026-11-23
// 17:19:46Z.
export const when = (iso) => {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isNaN(t) ? "–" : new Date(t).toISOString().slice(0, 19).replace("T", " ") + "Z";
};

export async function render(el, ctx) {
  if (ctx.params[0]) return recordPage(el, ctx.params[0]);
  el.append(h("h1", {}, "Records"));
  const form = h("form", { class: "controls", "aria-label": "Filters" });
  const field = (name, input) => { form.append(h("label", { for: `f-${name}` }, name), input); };
  const select = (name, opts) => h("select", { id: `f-${name}`, name }, h("option", { value: "" }, "any"),
    opts.map((o) => h("option", { value: o, selected: filters[name] === o }, o)));
  field("type", select("type", TYPES));
  field("status", select("status", STATUSES));
  field("sensitivity", select("sensitivity", SENSITIVITIES));
  for (const name of ["tag", "scope", "subject", "predicate"]) field(name, h("input", { id: `f-${name}`, name, value: filters[name], size: 12 }));
  form.append(h("button", { type: "submit" }, "Filter"));
  const list = h("div", { id: "records-list" });
  el.append(form, list);
  let cursor = "";
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    for (const [k, v] of new FormData(form)) filters[k] = v;
    cursor = "";
    load(false);
  });
  async function load(more) {
    const page = await get("/v1/records", { ...filters, scope: filters.scope || undefined, cursor: cursor || undefined });
    const rows = page.records.map((r) => h("tr", { "data-id": r.id, "data-type": r.type },
      h("td", {}, h("a", { href: href(r.id) }, short(r.id))), h("td", {}, r.type), h("td", {}, r.status),
      h("td", {}, summary(r)), h("td", { class: "num" }, r.salience.toFixed(3)), h("td", {}, when(r.updated_at))));
    let tbody = list.querySelector("tbody");
    if (!more || !tbody) {
      tbody = h("tbody");
      list.replaceChildren(page.records.length || more ? h("table", { class: "rows" }, h("caption", {}, "Records"),
        h("thead", {}, h("tr", {}, ["Id", "Type", "Status", "Summary", "Salience", "Updated"].map((c) => h("th", { scope: "col" }, c)))), tbody)
        : h("p", { class: "empty" }, "No records match."));
    }
    tbody.append(...rows);
    list.querySelector(".more")?.remove();
    cursor = page.next_cursor || "";
    if (cursor) {
      const b = h("button", { type: "button", class: "more" }, "More");
      b.addEventListener("click", () => load(true));
      list.append(b);
    }
  }
  await load(false);
}

// summary is a record's one-line gist by type.
export function summary(r) {
  const p = r.payload || {};
  switch (r.type) {
    case "semantic": return `${p.subject} ${p.predicate} ${typeof p.object === "string" ? p.object : JSON.stringify(p.object)}`;
    case "competence": return `${p.skill_name} (${(p.triggers || []).map((t) => t.signal).join(", ")})`;
    case "plan_graph": return `${p.plan_id} v${p.version}${p.intent ? ": " + p.intent : ""}`;
    case "episodic": return [r.thread_id, p.outcome, p.summary || `${(p.timeline || []).length} events`].filter(Boolean).join(" · ");
    case "working": return [p.thread_id, p.state].filter(Boolean).join(" · ");
  }
  return "";
}

function dl(pairs) {
  return h("dl", { class: "kv" }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "").flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

const list = (xs, f = (x) => x) => (xs && xs.length ? h("ul", {}, xs.map((x) => h("li", {}, f(x)))) : null);
const conds = (c) => (c && Object.keys(c).length ? Object.entries(c).map(([k, v]) => `${k} = ${typeof v === "string" ? v : JSON.stringify(v)}`).join(", ") : "always");

// payloadView shows a payload readably by type, the JSON beneath.
export function payloadView(r) {
  const p = r.payload || {};
  let body;
  switch (r.type) {
    case "semantic":
      body = dl([["Subject", p.subject], ["Predicate", p.predicate], ["Object", typeof p.object === "string" ? p.object : JSON.stringify(p.object)],
        ["Validity", p.validity ? `${p.validity.mode}${p.validity.conditions ? " when " + conds(p.validity.conditions) : ""}` : ""],
        ["Revision", p.revision ? p.revision.status : ""]]);
      break;
    case "competence":
      body = h("div", {}, dl([["Skill", p.skill_name], ["Version", p.version],
        ["Performance", p.performance ? `${p.performance.successes} successes, ${p.performance.failures} failures` : ""],
        ["Tools", (p.required_tools || []).join(", ")]]),
      h("h3", {}, "Triggers and conditions"), list(p.triggers, (t) => `${t.signal} — when ${conds(t.conditions)}`),
      h("h3", {}, "Recipe"), h("ol", {}, (p.recipe || []).map((s) => h("li", {}, s.step, s.tool ? ` (${s.tool})` : "", s.validation ? ` — check: ${s.validation}` : ""))),
      p.fallbacks?.length ? [h("h3", {}, "Fallbacks"), list(p.fallbacks)] : null,
      p.failure_modes?.length ? [h("h3", {}, "Failure modes"), list(p.failure_modes)] : null);
      break;
    case "plan_graph":
      body = h("div", {}, dl([["Plan", p.plan_id], ["Version", p.version], ["Intent", p.intent]]),
        h("h3", {}, "Nodes"), list(p.nodes, (n) => `${n.id}: ${n.op}${n.guards ? " [guards " + JSON.stringify(n.guards) + "]" : ""}`),
        h("h3", {}, "Edges"), list(p.edges, (e) => `${e.from} → ${e.to} (${e.kind})`));
      break;
    case "episodic":
      body = h("div", {}, dl([["Thread", r.thread_id], ["Outcome", p.outcome], ["Summary", p.summary],
        ["Environment", p.environment ? Object.entries(p.environment).map(([k, v]) => `${k}=${v}`).join(", ") : ""]]),
        h("h3", {}, "Timeline"), h("ol", { class: "timeline" }, (p.timeline || []).map((e) => h("li", {}, `${when(e.t)} ${e.event_kind}`, e.summary ? ` — ${e.summary}` : ""))));
      break;
    default:
      body = h("div", {}, dl([["Thread", p.thread_id], ["State", p.state], ["Context", p.context_summary]]),
        p.next_actions?.length ? [h("h3", {}, "Next actions"), list(p.next_actions)] : null,
        p.open_questions?.length ? [h("h3", {}, "Open questions"), list(p.open_questions)] : null);
  }
  return h("div", { class: "payload", "data-kind": r.type }, body,
    h("details", {}, h("summary", {}, "JSON"), h("pre", {}, JSON.stringify(p, null, 2))));
}

// flatten maps a JSON value to its leaves by JSON pointer.
function flatten(v, path = "", out = {}) {
  if (v && typeof v === "object") {
    const keys = Object.keys(v);
    if (!keys.length) out[path || "/"] = Array.isArray(v) ? "[]" : "{}";
    for (const k of keys) flatten(v[k], `${path}/${k}`, out);
  } else out[path || "/"] = JSON.stringify(v);
  return out;
}

// diff lists what changed from one version's record to the next, leaf by
// leaf, leaving out what every revision changes.
export function diff(a, b) {
  const skip = new Set(["/version", "/updated_at", "/salience"]);
  const fa = flatten(a), fb = flatten(b);
  const keys = [...new Set([...Object.keys(fa), ...Object.keys(fb)])].filter((k) => !skip.has(k)).sort();
  return keys.filter((k) => fa[k] !== fb[k]).map((k) => ({ path: k, from: fa[k], to: fb[k] }));
}

// retention is decay.Retention: the share of salience above the floor a
// curve keeps at an age (seconds).
export function retention(d, age) {
  if (age <= 0) return 1;
  const hl = d.half_life_seconds;
  if (d.curve === "linear") return Math.max(0, 1 - age / (2 * hl));
  if (d.curve === "custom" && d.points?.length) {
    let prev = { age_seconds: 0, salience: 1 };
    for (const p of d.points) {
      if (age <= p.age_seconds) return prev.salience + ((p.salience - prev.salience) * (age - prev.age_seconds)) / Math.max(1, p.age_seconds - prev.age_seconds);
      prev = p;
    }
    return prev.salience;
  }
  return Math.pow(2, -age / hl);
}

// salienceCurve is the record's salience from its last reinforcement to two
// half-lives past now, assuming no reinforcement.
function salienceCurve(r) {
  const d = r.lifecycle.decay, floor = d.min_salience || 0;
  const t0 = Date.parse(r.lifecycle.last_reinforced_at), now = Date.now();
  const keep = retention(d, (now - t0) / 1000);
  const base = r.salience <= floor || keep <= 0 ? r.salience : floor + (r.salience - floor) / keep;
  const end = now + 2 * d.half_life_seconds * 1000;
  const n = 24, labels = [], values = [];
  for (let i = 0; i <= n; i++) {
    const t = t0 + ((end - t0) * i) / n;
    labels.push(new Date(t).toISOString().slice(0, 10));
    values.push(r.lifecycle.pinned || base <= floor ? base : floor + (base - floor) * retention(d, (t - t0) / 1000));
  }
  return lineChart({ id: "salience-curve", title: "Salience curve", labels, series: [{ name: "salience", values }],
    note: `${d.curve}, half-life ${(d.half_life_seconds / 86400).toFixed(1)} days${floor ? `, floor ${floor}` : ""}; now ${r.salience.toFixed(3)}${r.lifecycle.pinned ? " (pinned)" : ""}. From the last reinforcement to two half-lives ahead, with no reinforcement.` });
}

async function recordPage(el, id) {
  const [r, hist, audit, rel] = await Promise.all([get(`/v1/records/${id}`), get(`/v1/records/${id}/history`),
    get(`/v1/records/${id}/audit`), get(`/v1/records/${id}/relations`)]);
  el.dataset.id = r.id;
  el.append(h("p", {}, h("a", { href: "#/records" }, "← Records")),
    h("h1", {}, `${r.type.replace("_", " ")} ${short(r.id)}`, h("span", { class: `badge ${r.status}`, "data-status": r.status }, r.status)),
    dl([["Id", r.id], ["Version", r.version], ["Confidence", r.confidence], ["Salience", r.salience.toFixed(3)], ["Sensitivity", r.sensitivity],
      ["Scope", r.scope], ["Tags", (r.tags || []).join(", ")], ["Created", when(r.created_at)], ["Updated", when(r.updated_at)]]));
  el.append(h("h2", {}, "Payload"), payloadView(r));

  const versions = hist.versions;
  const vt = h("ol", { class: "versions", reversed: true }, versions.slice().reverse().map((v) => {
    const i = versions.indexOf(v);
    const changes = i === 0 ? [] : diff(versions[i - 1].record, v.record);
    return h("li", { "data-version": v.version }, h("strong", {}, `v${v.version}`), ` ${when(v.recorded_at)} — ${v.record.status}`,
      i === 0 ? h("p", { class: "note" }, "created") :
        h("table", { class: "diff" }, h("thead", {}, h("tr", {}, h("th", {}, "Field"), h("th", {}, "Before"), h("th", {}, "After"))),
          h("tbody", {}, changes.map((c) => h("tr", { "data-path": c.path }, h("td", {}, c.path), h("td", { class: "del" }, c.from ?? "–"), h("td", { class: "ins" }, c.to ?? "–"))))));
  }));
  el.append(h("h2", {}, `Versions (${versions.length})`), vt);

  el.append(h("h2", {}, "Audit"), h("table", { class: "rows audit" }, h("thead", {}, h("tr", {}, ["When", "Action", "Actor", "Version", "Rationale"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, audit.entries.map((a) => h("tr", { "data-action": a.action }, h("td", {}, when(a.at)), h("td", {}, a.action), h("td", {}, a.actor), h("td", {}, a.version ?? ""), h("td", {}, a.rationale || ""))))));

  const src = r.provenance.sources || [];
  el.append(h("h2", {}, "Provenance"), dl([["Created by", r.provenance.created_by]]),
    src.length ? h("ul", { class: "sources" }, src.map((s) => h("li", { "data-kind": s.kind }, `${s.kind}: `, s.ref.startsWith("record://") ? h("a", { href: href(s.ref.slice(9)) }, s.ref) : s.ref))) : h("p", { class: "empty" }, "No sources."));

  el.append(h("div", { class: "grid" }, relationGraph({ id: "relations", center: r.id, edges: rel.relations, label: short, href }), salienceCurve(r)));
}

export { fmt };
