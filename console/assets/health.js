// Health: the metrics of substrate RFC §15.10 over time (GET
// /v1/stats/health) and the composite health score of write-path RFC
// §12.12.7 with its parts; an operator picks the tenant, and sees the
// write path's refusals by gate and reason (GET /v1/stats/writes).

import { get } from "./api.js";
import { barChart, fmt, h, histogramLabels, lineChart } from "./chart.js";
import { RATE_NOTE } from "./learning.js";

const TYPES = ["episodic", "working", "semantic", "competence", "plan_graph"];
const HOUR = 36e5;
const DAY = 864e5;
// Each range is whole buckets of UTC time ending with the current one, so
// that a bucket labelled 12-06 is the day 12-06 (UTC) and today's data is
// under today's date.
const RANGES = {
  "24h": { n: 24, unit: HOUR, bucket: "hour", label: "Last 24 hours (hourly, UTC)" },
  "7d": { n: 7, unit: DAY, bucket: "day", label: "Last 7 days (daily, UTC)" },
  "30d": { n: 30, unit: DAY, bucket: "day", label: "Last 30 days (daily, UTC)" },
  "180d": { n: 26, unit: 7 * DAY, bucket: "week", label: "Last 26 weeks (weekly, UTC)" },
};
// chosen is whether the person picked the range; until they do, a tenant
// whose memory is all from today is shown by the hour (day one).
const prefs = { range: "7d", tenant: "", chosen: false };

// span is the range's from and to: from the start of the bucket n-1
// buckets before the current one, to now.
function span(r, now) {
  const day = Math.floor(now / DAY) * DAY;
  const current = r.unit === HOUR ? Math.floor(now / HOUR) * HOUR : day;
  return { from: new Date(current - (r.n - 1) * r.unit), to: new Date(now) };
}

function label(iso, bucket) {
  const d = new Date(iso);
  const md = `${String(d.getUTCMonth() + 1).padStart(2, "0")}-${String(d.getUTCDate()).padStart(2, "0")}`;
  return bucket === "hour" ? `${md} ${String(d.getUTCHours()).padStart(2, "0")}:00` : md;
}

export async function render(el, { who }) {
  el.append(h("h1", {}, "Health"));
  const controls = h("form", { class: "controls", "aria-label": "Filters" });
  if (who.operator) {
    if (!prefs.tenant || !who.tenants.includes(prefs.tenant)) prefs.tenant = who.tenants[0] || "";
    const sel = h("select", { id: "health-tenant", name: "tenant" }, who.tenants.map((t) => h("option", { value: t, selected: t === prefs.tenant }, t)));
    sel.addEventListener("change", () => { prefs.tenant = sel.value; load(); });
    controls.append(h("label", { for: "health-tenant" }, "Tenant"), sel);
  }
  const range = h("select", { id: "health-range", name: "range" }, Object.entries(RANGES).map(([k, r]) => h("option", { value: k, selected: k === prefs.range }, r.label)));
  range.addEventListener("change", () => { prefs.range = range.value; prefs.chosen = true; load(); });
  controls.append(h("label", { for: "health-range" }, "Range"), range);
  const body = h("div", { id: "health-body" });
  el.append(controls, body);

  // seq numbers the loads: only the latest one's answer is shown, so that
  // switching tenant or range quickly never leaves an older answer up.
  let seq = 0;
  const fetchStats = (name, now) => {
    const r = RANGES[name];
    const { from, to } = span(r, now);
    return get("/v1/stats/health", { tenant: who.operator ? prefs.tenant : undefined, bucket: r.bucket,
      from: from.toISOString(), to: to.toISOString() });
  };
  async function load() {
    const mine = ++seq;
    body.dataset.loading = "true";
    if (who.operator && !prefs.tenant) {
      body.replaceChildren(h("p", { class: "empty" }, "No tenant yet: the database holds none."));
      delete body.dataset.loading;
      return;
    }
    const now = Date.now();
    let name = prefs.range;
    let st = await fetchStats(name, now);
    let note = null;
    if (!prefs.chosen && name !== "24h" && onlyToday(st)) {
      // Day one: a week of days would show one point at its end.
      name = "24h";
      st = await fetchStats(name, now);
      note = h("p", { class: "note", id: "health-range-note" }, "Everything this tenant holds is from today: shown by the hour. Pick a range to see days.");
    }
    const writes = who.operator ? await get("/v1/stats/writes") : null;
    if (mine !== seq) return;
    range.value = name;
    body.replaceChildren(...(note ? [note] : []), ...view(st, writes));
    body.dataset.tenant = st.tenant;
    body.dataset.range = name;
    if (!who.operator && !who.tenant) {
      who.tenant = st.tenant;
      sessionStorage.setItem("engram.tenant", st.tenant);
      const name = document.getElementById("who-name");
      if (name) name.textContent = `Tenant ${st.tenant}`;
    }
    delete body.dataset.loading;
  }
  await load();
}

// onlyToday is whether the tenant held no record before the range's last
// bucket (today) and holds some now.
function onlyToday(st) {
  const held = st.series.map((b) => Object.values(b.records || {}).reduce((a, n) => a + n, 0));
  return held.length > 1 && held[held.length - 1] > 0 && held[held.length - 2] === 0;
}

function view(st, writes) {
  const labels = st.series.map((b) => label(b.start, st.bucket));
  const out = [];
  const sc = st.score;
  out.push(h("section", { class: "score", "data-status": sc.status, "data-score": sc.score ?? "" },
    h("h2", {}, "Memory health score"),
    h("p", { class: `big ${sc.status}` }, sc.score === null ? "–" : sc.score.toFixed(2), h("span", { class: "status" }, sc.status)),
    h("p", { class: "note" }, "The composite score of write-path RFC §12.12.7 over the range: the weighted mean of the parts that could be measured."),
    h("table", { class: "parts" }, h("caption", {}, "Parts"),
      h("thead", {}, h("tr", {}, ["Part", "Weight", "Value", "Normalised", "What it measures"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, sc.parts.map((p) => h("tr", { "data-part": p.name, "data-normalized": p.normalized ?? "" },
        h("th", { scope: "row" }, p.name.replaceAll("_", " ")), h("td", {}, p.weight.toFixed(2)), h("td", {}, fmt(p.value)),
        h("td", {}, p.normalized === null ? "not measured" : p.normalized.toFixed(2)), h("td", {}, p.detail)))))));

  const live = TYPES.map((t) => st.live[t] || 0);
  out.push(h("section", { class: "tiles", "aria-label": "Live records" }, TYPES.map((t, i) =>
    h("div", { class: "tile", "data-live-type": t, "data-count": live[i] }, h("span", { class: "n" }, live[i]), h("span", {}, t.replace("_", " ")))),
  h("div", { class: "tile", "data-live-type": "contested", "data-count": st.contested }, h("span", { class: "n" }, st.contested), h("span", {}, "contested"))));

  const grid = h("div", { class: "grid" });
  const bySeries = (f) => TYPES.map((t) => ({ name: t, values: st.series.map((b) => f(b)[t] || 0) }));
  grid.append(lineChart({ id: "records-by-type", title: "Records by type", labels, series: bySeries((b) => b.records),
    note: "Records held at each bucket's end, whatever their status." }));
  grid.append(barChart({ id: "growth", title: "Growth: records created", labels, series: bySeries((b) => b.created) }));
  const hl = histogramLabels(st.salience.bounds);
  grid.append(barChart({ id: "salience", title: "Salience distribution by type", labels: hl, xTitle: "Salience",
    series: TYPES.map((t) => ({ name: t, values: st.salience.types[t] || hl.map(() => 0) })),
    note: "Live records' salience as of the last decay sweep." }));
  grid.append(lineChart({ id: "usefulness", title: "Retrieval usefulness", labels, format: "percent",
    series: [{ name: "usefulness", label: "records used / given feedback", values: st.series.map((b) => b.usefulness) }] }));
  grid.append(barChart({ id: "retrievals", title: "Retrievals", labels, series: [{ name: "retrievals", values: st.series.map((b) => b.retrievals) }] }));
  const uses = st.series.map((b) => b.competence_successes + b.competence_failures);
  grid.append(lineChart({ id: "competence", title: "Competence success rate", labels, format: "rate",
    series: [{ name: "competence", label: "live procedures' success rate", values: st.series.map((b) => b.competence_success_rate) }],
    note: "The live procedures' uses at each bucket's end, from their own counts (by episode or feedback), as the Learning page counts them" +
      (uses.length && uses[uses.length - 1] ? ` (now ${st.series[st.series.length - 1].competence_successes} of ${uses[uses.length - 1]} worked)` : "") +
      ". " + RATE_NOTE }));
  grid.append(barChart({ id: "plan-reuse", title: "Plan reuse", labels, series: [{ name: "plan_graph", label: "plans used", values: st.series.map((b) => b.plan_reuse) }] }));
  grid.append(lineChart({ id: "revision-rates", title: "Contradiction and revision rates", labels,
    series: [{ name: "contradiction_rate", label: "contradictions per record created", values: st.series.map((b) => b.contradiction_rate) },
      { name: "revision_rate", label: "revisions per record created", values: st.series.map((b) => b.revision_rate) }] }));
  const outcomes = ["created", "absorbed", "merged", "contested", "queued", "approved", "rejected"];
  grid.append(barChart({ id: "writes", title: "Write outcomes", labels, series: outcomes.map((o) => ({ name: o, values: st.series.map((b) => b.writes[o] || 0) })) }));
  grid.append(lineChart({ id: "acceptance", title: "Write acceptance rate", labels, format: "percent",
    series: [{ name: "acceptance_rate", label: "accepted / decided", values: st.series.map((b) => b.acceptance_rate) }],
    note: "Target 40–80% (write-path RFC §12.12.3)." }));
  const reasons = Object.keys(st.rejection_reasons).sort();
  grid.append(barChart({ id: "rejection-reasons", title: "Reviews rejected, by reason", labels: reasons, xTitle: "Reason",
    series: [{ name: "rejected", values: reasons.map((r) => st.rejection_reasons[r]) }] }));
  if (writes) {
    const rj = writes.rejections || [];
    grid.append(barChart({ id: "gate-rejections", title: "Writes refused by a gate, by reason", xTitle: "Gate: reason",
      labels: rj.map((r) => `${r.gate}: ${r.reason}`), series: [{ name: "refused", values: rj.map((r) => r.count) }],
      note: `This daemon's, every tenant's, since ${new Date(writes.since).toISOString().slice(0, 16).replace("T", " ")} UTC.` }));
  }
  out.push(grid);
  return out;
}
