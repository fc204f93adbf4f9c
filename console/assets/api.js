// The console's client of the /v1 API: the key signed in with is kept in
// sessionStorage (gone when the tab closes) and sent as a bearer token.
// Errors are the API's problem documents, thrown as ApiError.

const KEY = "engram.key";

export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

export const session = {
  get key() { return sessionStorage.getItem(KEY) || ""; },
  set key(v) { v ? sessionStorage.setItem(KEY, v) : sessionStorage.removeItem(KEY); },
};

// api calls the API: body is sent as JSON, or, given type, as it is, with
// that Content-Type (the decay page sends YAML).
export async function api(method, path, { query, body, type } = {}) {
  let url = path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null || v === "") continue;
      for (const x of [].concat(v)) q.append(k, x);
    }
    const s = q.toString();
    if (s) url += "?" + s;
  }
  const headers = { Authorization: `Bearer ${session.key}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = type || "application/json";
  const sent = body === undefined || type ? body : JSON.stringify(body);
  const res = await fetch(url, { method, headers, body: sent });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { detail: text }; }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

export const get = (path, query) => api("GET", path, { query });
export const post = (path, body, query) => api("POST", path, { body, query });

// whoami finds out what the key is: an operator's (it may list tenants)
// or a tenant's, and whether its role reads the review queue. It reads no
// statistics: the tenant's name comes with the first page that shows it.
export async function whoami() {
  try {
    const t = await get("/v1/tenants");
    return { operator: true, tenants: t.tenants.map((x) => x.id) };
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 403) throw e;
  }
  let reviewer = true;
  try { await get("/v1/reviews", { limit: 1 }); } catch (e) { if (e.status === 403) reviewer = false; else throw e; }
  return { operator: false, tenant: "", reviewer };
}
