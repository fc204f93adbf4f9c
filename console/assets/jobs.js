// Jobs (operator keys): the periodic jobs, their schedules and next ticks,
// their last runs with durations and counts, a running job's progress (its
// counts so far), and running one now.

import { get, post } from "./api.js";
import { h } from "./chart.js";
import { when } from "./records.js";

function duration(run) {
  const end = run.ended_at ? Date.parse(run.ended_at) : Date.now();
  const s = (end - Date.parse(run.started_at)) / 1000;
  return s < 1 ? `${Math.round(s * 1000)} ms` : s < 120 ? `${s.toFixed(1)} s` : `${(s / 60).toFixed(1)} min`;
}

const counts = (c) => Object.entries(c || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "–";

export async function render(el, ctx) {
  el.append(h("h1", {}, "Jobs"));
  const ov = await get("/v1/jobs");
  el.append(h("p", {}, `This daemon (${ov.node}) ${ov.leader ? "leads: its ticks run the jobs." : "does not lead: another daemon's ticks run the jobs."}`));
  const msg = h("p", { class: "error", role: "alert" });
  el.append(h("table", { class: "rows" }, h("caption", {}, "Periodic jobs"),
    h("thead", {}, h("tr", {}, ["Job", "Schedule", "Next run", "Last run", "Status", "Duration", "Counts", ""].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, ov.jobs.map((j) => {
      const r = j.last_run;
      const run = h("button", { type: "button", "data-run": j.name }, "Run now");
      run.addEventListener("click", async () => {
        run.disabled = true;
        try {
          const started = await post(`/v1/jobs/${encodeURIComponent(j.name)}:run`);
          run.dataset.started = started.run.id;
          setTimeout(ctx.rerender, 500);
        } catch (e) { msg.textContent = `${j.name}: ${e.message}`; run.disabled = false; }
      });
      return h("tr", { "data-job": j.name, "data-status": r ? r.status : "" },
        h("th", { scope: "row" }, j.name), h("td", {}, j.schedule), h("td", {}, when(j.next_run)),
        h("td", {}, r ? `${when(r.started_at)} (${r.trigger})` : "never"),
        h("td", {}, r ? h("span", { class: `badge ${r.status}` }, r.status, r.status === "running" ? h("progress", { "aria-label": `${j.name} running` }) : null) : "–"),
        h("td", {}, r ? duration(r) : "–"), h("td", { "data-counts": JSON.stringify(r ? r.counts : {}) }, r ? counts(r.counts) : "–", r?.error ? h("div", { class: "error" }, r.error) : null),
        h("td", {}, run));
    }))), msg);
  if (ov.jobs.some((j) => j.last_run?.status === "running")) setTimeout(() => location.hash.startsWith("#/jobs") && ctx.rerender(), 2000);
}
