// Decay tuning: edit the decay section of the configuration and see, before
// applying it, what it would do (POST /v1/decay/preview): each type's
// salience distribution now and at the horizon under the profile in force
// and the proposed one, side by side, and how many records a sweep would
// expire. Nothing is changed: applying is editing engramd's configuration
// file (the decay section below) and reloading it (SIGHUP).

import { api, ApiError, post } from "./api.js";
import { barChart, h, histogramLabels } from "./chart.js";

const TYPES = ["episodic", "working", "semantic", "competence", "plan_graph"];

export async function render(el) {
  el.append(h("h1", {}, "Decay tuning"));
  const first = await post("/v1/decay/preview", {});
  const text = h("textarea", { id: "decay-proposed", rows: 24, spellcheck: "false", class: "code" }, first.current_yaml);
  const horizon = h("input", { id: "decay-horizon", value: "+30d", size: 8 });
  const msg = h("p", { class: "error", role: "alert" });
  const btn = h("button", { type: "submit" }, "Preview");
  const form = h("form", { class: "editor" },
    h("label", { for: text.id }, "Proposed decay section, in YAML as under decay: in the configuration file (profiles by type, prune_threshold, …)"), text,
    h("div", { class: "controls" }, h("label", { for: horizon.id }, "Horizon"), horizon, btn), msg);
  const out = h("div", { id: "decay-preview" });
  el.append(form, out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    msg.textContent = "";
    out.dataset.loading = "true";
    try {
      // The server reads the YAML as engramd reads its configuration file,
      // and names a wrong field with its line.
      show(out, await api("POST", "/v1/decay/preview", { query: { at: horizon.value }, body: text.value, type: "application/yaml" }));
    } catch (e) {
      msg.textContent = e instanceof ApiError && e.problem.errors ? e.problem.errors.map((x) => `${x.pointer || x.parameter || ""} ${x.message}`.trim()).join("; ") : e.message;
    }
    delete out.dataset.loading;
  });
  show(out, first);
}

function show(out, pv) {
  const labels = histogramLabels(pv.bounds);
  const types = TYPES.filter((t) => pv.types[t]);
  const at = pv.at.slice(0, 10);
  const summary = h("table", { class: "rows", id: "decay-summary" }, h("caption", {}, `Records a sweep would expire (now and on ${at})`),
    h("thead", {}, h("tr", {}, ["Type", "Live records", "Now, current", "Now, proposed", `${at}, current`, `${at}, proposed`].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, types.map((t) => {
      const x = pv.types[t];
      return h("tr", { "data-type": t, "data-prune-current": x.current.prune_at, "data-prune-proposed": x.proposed.prune_at },
        h("th", { scope: "row" }, t), h("td", { class: "num" }, x.records), h("td", { class: "num" }, x.current.prune_now), h("td", { class: "num" }, x.proposed.prune_now),
        h("td", { class: "num" }, x.current.prune_at), h("td", { class: "num" }, x.proposed.prune_at));
    })));
  const charts = types.map((t) => {
    const x = pv.types[t];
    return h("div", { class: "pair" },
      barChart({ id: `decay-${t}-current`, title: `${t}: current profile`, labels, xTitle: "Salience",
        series: [{ name: "now", values: x.current.now.counts }, { name: `at ${at}`, values: x.current.at.counts }] }),
      barChart({ id: `decay-${t}-proposed`, title: `${t}: proposed profile`, labels, xTitle: "Salience",
        series: [{ name: "now", values: x.proposed.now.counts }, { name: `at ${at}`, values: x.proposed.at.counts }] }));
  });
  out.replaceChildren(types.length ? summary : h("p", { class: "empty" }, "No live records to project."), ...charts);
}
