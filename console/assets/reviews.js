// Reviews: the write path's queue (write-path RFC §12.6). Each pending
// draft with its risk and reasons; approve or reject it with a
// justification (and, to reject, a reason).

import { api, get } from "./api.js";
import { h } from "./chart.js";
import { href, payloadView, short, when } from "./records.js";

const REASONS = ["factual_error", "policy_violation", "duplicate", "insufficient_evidence", "contradiction", "other"];

export async function render(el, ctx) {
  el.append(h("h1", {}, "Reviews"));
  const page = await get("/v1/reviews", { status: "pending", limit: 100 });
  if (!page.reviews.length) {
    el.append(h("p", { class: "empty", "data-pending": 0 }, "No review pending."));
    return;
  }
  el.append(h("p", { "data-pending": page.reviews.length }, `${page.reviews.length} pending, oldest first.`));
  for (const rv of page.reviews) el.append(card(rv, ctx));
}

function card(rv, ctx) {
  const id = `rv-${rv.id}`;
  const just = h("textarea", { id: `${id}-just`, name: "justification", rows: 2, required: true });
  const reason = h("select", { id: `${id}-reason`, name: "reason" }, REASONS.map((r) => h("option", { value: r }, r.replaceAll("_", " "))));
  const msg = h("p", { class: "error", role: "alert" });
  const approve = h("button", { type: "button", "data-action": "approve" }, "Approve");
  const reject = h("button", { type: "button", "data-action": "reject", class: "danger" }, "Reject");
  const art = h("article", { class: "review", "data-review": rv.id, "data-record": rv.record_id, "aria-labelledby": `${id}-h` },
    h("h2", { id: `${id}-h` }, `Draft `, h("a", { href: href(rv.record_id) }, short(rv.record_id)), ` · risk ${rv.risk.toFixed(2)} · ${rv.tier}`),
    h("p", {}, `Queued ${when(rv.created_at)}, due ${when(rv.sla_deadline)}${rv.agent_id ? `, by ${rv.agent_id}` : ""}.`),
    h("ul", { class: "reasons" }, (rv.reasons || []).map((r) => h("li", {}, r))),
    rv.proposal?.supersedes ? h("p", { "data-supersedes": rv.proposal.supersedes }, "Approving it supersedes ", h("a", { href: href(rv.proposal.supersedes) }, short(rv.proposal.supersedes)), ".") : null,
    rv.record ? payloadView(rv.record) : null,
    h("div", { class: "decide" }, h("label", { for: just.id }, "Justification"), just,
      h("label", { for: reason.id }, "Reason (to reject)"), reason, approve, reject), msg);
  const decide = async (op) => {
    if (!just.value.trim()) { msg.textContent = "Write a justification first."; just.focus(); return; }
    const body = op === "approve" ? { justification: just.value } : { justification: just.value, reason: reason.value };
    try {
      await api("POST", `/v1/reviews/${rv.id}:${op}`, { body });
      art.replaceChildren(h("p", { class: "done", "data-decided": op }, `${op === "approve" ? "Approved" : "Rejected"}: draft ${short(rv.record_id)}.`));
      art.dataset.decided = op;
    } catch (e) { msg.textContent = e.message; }
  };
  approve.addEventListener("click", () => decide("approve"));
  reject.addEventListener("click", () => decide("reject"));
  return art;
}
