// The console's shell: sign-in, the navigation the key's role allows, and a
// hash router (#/health, #/records, #/records/<id>, #/learning,
// #/learning/<id>, #/reviews, #/decay, #/jobs). Each page renders into
// #page and marks it data-ready once its data is shown (or data-error when
// the API refused).

import { ApiError, session, whoami } from "./api.js";
import { h } from "./chart.js";
import * as health from "./health.js";
import * as records from "./records.js";
import * as learning from "./learning.js";
import * as reviews from "./reviews.js";
import * as decay from "./decay.js";
import * as jobs from "./jobs.js";

const pages = [
  { path: "health", title: "Health", mod: health, who: () => true },
  { path: "records", title: "Records", mod: records, who: (w) => !w.operator },
  { path: "learning", title: "Learning", mod: learning, who: (w) => !w.operator },
  { path: "reviews", title: "Reviews", mod: reviews, who: (w) => !w.operator && w.reviewer },
  { path: "decay", title: "Decay tuning", mod: decay, who: (w) => !w.operator },
  { path: "jobs", title: "Jobs", mod: jobs, who: (w) => w.operator },
];

const state = { who: null };

function $(id) { return document.getElementById(id); }

function showSignIn(message) {
  $("signin").hidden = false;
  $("page").replaceChildren();
  $("nav").replaceChildren();
  $("who").replaceChildren();
  $("signin-error").textContent = message || "";
  $("key").focus();
}

async function signIn(key) {
  if (key !== session.key) sessionStorage.removeItem("engram.tenant");
  session.key = key;
  try {
    state.who = await whoami();
    // The tenant's name, once a page has shown it this session.
    if (!state.who.operator) state.who.tenant = sessionStorage.getItem("engram.tenant") || "";
  } catch (e) {
    session.key = "";
    state.who = null;
    showSignIn(e instanceof ApiError && e.status === 401 ? "That key is not accepted." : `Could not sign in: ${e.message}`);
    return false;
  }
  $("signin").hidden = true;
  const allowed = pages.filter((p) => p.who(state.who));
  $("nav").replaceChildren(h("ul", {}, allowed.map((p) => h("li", {}, h("a", { href: `#/${p.path}`, "data-nav": p.path }, p.title)))));
  const out = h("button", { type: "button", class: "link" }, "Sign out");
  out.addEventListener("click", () => { session.key = ""; sessionStorage.removeItem("engram.tenant"); state.who = null; location.hash = ""; showSignIn(); });
  $("who").replaceChildren(h("span", { id: "who-name", "data-who": state.who.operator ? "operator" : "tenant" },
    state.who.operator ? "Operator" : state.who.tenant ? `Tenant ${state.who.tenant}` : "Tenant key"), " ", out);
  return true;
}

async function route() {
  if (!state.who) return;
  const [, name = "health", ...rest] = (location.hash || "#/health").split("/");
  const known = pages.find((p) => p.path === name);
  if (known && !known.who(state.who)) {
    // A page this key may not see says so, rather than showing another.
    const el = h("section", { class: "page", "data-page": known.path, "data-denied": "true" },
      h("h1", {}, known.title),
      h("p", { role: "alert" }, state.who.operator
        ? `${known.title} shows one tenant's memory: this is an operator's key, which reads health and jobs across tenants. Sign in with a tenant's key to see ${known.title.toLowerCase()}.`
        : `${known.title} needs another role: this key may not read it.`));
    $("page").replaceChildren(el);
    document.title = `${known.title} · engram console`;
    el.dataset.ready = "true";
    return;
  }
  const page = known || pages[0];
  for (const a of document.querySelectorAll("[data-nav]")) {
    a.toggleAttribute("aria-current", a.dataset.nav === page.path);
    if (a.dataset.nav === page.path) a.setAttribute("aria-current", "page");
  }
  const root = $("page");
  const el = h("section", { class: "page", "data-page": page.path });
  root.replaceChildren(el);
  document.title = `${page.title} · engram console`;
  try {
    await page.mod.render(el, { who: state.who, params: rest.map(decodeURIComponent), rerender: route });
    el.dataset.ready = "true";
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) { session.key = ""; state.who = null; showSignIn("Signed out: the key is no longer accepted."); return; }
    el.append(h("p", { class: "error", role: "alert" }, `Could not load: ${e.message}`));
    el.dataset.error = e.message;
    el.dataset.ready = "true";
  }
}

window.addEventListener("hashchange", route);
$("signin-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  if (await signIn($("key").value.trim())) { $("key").value = ""; route(); $("main").focus(); }
});

if (session.key) {
  signIn(session.key).then((ok) => ok && route());
} else {
  showSignIn();
}
