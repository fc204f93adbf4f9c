package openintent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/openintent"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

const (
	acmeKey       = "acme-curator-0123456789"
	globexKey     = "globex-curator-0123456789"
	executorKey   = "acme-executor-a1-0123456789"
	executorA2Key = "acme-executor-a2-0123456789"
)

// env is a real engramd (server.New over a freshly migrated schema) with
// a clock the test moves.
type env struct {
	url   string
	clock *atomic.Pointer[time.Time]
}

func (e env) advance(d time.Duration) {
	t := e.clock.Load().Add(d)
	e.clock.Store(&t)
}

func setup(t *testing.T, cfg openintent.Config) env {
	t.Helper()
	db := pgtest.NewSchema(t)
	clock := &atomic.Pointer[time.Time]{}
	start := time.Now().UTC()
	clock.Store(&start)
	now := func() time.Time { return *clock.Load() }
	wr := revise.New(db.Pool, revise.Config{Now: now})
	for _, tenant := range []string{"acme", "globex"} {
		require.NoError(t, store.EnsureTenant(t.Context(), db.Pool, tenant))
	}
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler), Now: now, OpenIntent: cfg,
		Retrieve: retrieve.New(db.Pool, rs),
		Keys: []server.Key{
			{Tenant: "acme", Name: "curator", Secret: acmeKey, Role: server.RoleCurator},
			{Tenant: "globex", Name: "curator", Secret: globexKey, Role: server.RoleCurator},
			{Tenant: "acme", Name: "executor-a1", Secret: executorKey, Role: server.RoleExecutor, Agent: "a1"},
			{Tenant: "acme", Name: "executor-a2", Secret: executorA2Key, Role: server.RoleExecutor, Agent: "a2"},
		},
	}))
	t.Cleanup(srv.Close)
	return env{url: srv.URL, clock: clock}
}

// answer is one HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(a.body, &m), "%s", a.body)
	return m
}

// sdk sends a request as the OpenIntent SDK (0.17) does: X-API-Key,
// X-Agent-ID and a JSON body; extra headers (If-Match) as given.
func (e env) sdk(t *testing.T, key, agent, method, path string, body any, headers ...string) answer {
	t.Helper()
	return e.do(t, method, path, body, append([]string{"X-API-Key", key, "X-Agent-ID", agent}, headers...)...)
}

// do sends a JSON request with headers (name, value, …) and reads the
// answer.
func (e env) do(t *testing.T, method, path string, body any, headers ...string) answer {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, r)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return answer{status: res.StatusCode, header: res.Header, body: b}
}

var (
	entryFields = []string{"id", "agent_id", "namespace", "key", "value", "memory_type", "version", "scope", "tags", "ttl",
		"pinned", "priority", "sensitivity", "curated_by", "created_at", "updated_at", "expires_at"}
	// Python 3.10's datetime.fromisoformat reads exactly this.
	timestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$`)
)

// requireEntry holds an entry to the wire format the SDK parses: every
// field, and timestamps Python 3.10 reads.
func requireEntry(t *testing.T, e map[string]any) {
	t.Helper()
	got := make([]string, 0, len(e))
	for k := range e {
		got = append(got, k)
	}
	require.ElementsMatch(t, entryFields, got)
	for _, f := range []string{"created_at", "updated_at"} {
		require.Regexp(t, timestamp, e[f], f)
	}
	if e["expires_at"] != nil {
		require.Regexp(t, timestamp, e["expires_at"])
	}
	require.Contains(t, []any{"working", "episodic", "semantic"}, e["memory_type"])
	require.Contains(t, []any{"low", "normal", "high"}, e["priority"])
	require.Contains(t, []any{nil, "public", "internal", "confidential", "restricted"}, e["sensitivity"])
}

// create_memory, as the SDK builds its body.
func createBody(agent, namespace, key string, value map[string]any, tier string, extra map[string]any) map[string]any {
	b := map[string]any{"agent_id": agent, "namespace": namespace, "key": key, "value": value, "memory_type": tier}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// The five calls of the published SDK, exactly as it sends them: create,
// get, list (a bare array), update with a bare integer If-Match (428
// without one, 409 with the current version on a stale one) and delete.
func TestSDKCalls(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	const agent = "agent_billing_01"

	res := e.sdk(t, acmeKey, agent, "POST", "/api/v1/memory", createBody(agent, "invoice_processing", "batch_progress",
		map[string]any{"total": 47, "completed": 23, "last_id": "inv_789", "errors": []any{}}, "working",
		map[string]any{"scope": map[string]any{"task_id": "task_01", "intent_id": "intent_01"}, "tags": []string{"batch", "invoices"},
			"ttl": "task_lifetime", "priority": "high", "sensitivity": "confidential", "curated_by": "user_01"}))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	created := res.object(t)
	requireEntry(t, created)
	require.Equal(t, map[string]any{"total": 47.0, "completed": 23.0, "last_id": "inv_789", "errors": []any{}}, created["value"])
	require.Equal(t, agent, created["agent_id"])
	require.Equal(t, "working", created["memory_type"])
	require.Equal(t, 1.0, created["version"])
	require.Equal(t, map[string]any{"task_id": "task_01", "intent_id": "intent_01"}, created["scope"])
	require.Equal(t, []any{"batch", "invoices"}, created["tags"])
	require.Equal(t, "task_lifetime", created["ttl"])
	require.Equal(t, "high", created["priority"])
	require.Equal(t, "confidential", created["sensitivity"])
	require.Equal(t, "user_01", created["curated_by"])
	require.Nil(t, created["expires_at"])
	id := created["id"].(string)

	res = e.sdk(t, acmeKey, agent, "GET", "/api/v1/memory/"+id, nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	got := res.object(t)
	requireEntry(t, got)
	require.Equal(t, created, got)

	// A second entry of another tier, and one of another agent.
	res = e.sdk(t, acmeKey, agent, "POST", "/api/v1/memory", createBody(agent, "learned_patterns", "stripe_thursdays",
		map[string]any{"observation": "elevated 500s"}, "episodic", map[string]any{"tags": []string{"stripe"}, "pinned": true}))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	episodic := res.object(t)
	requireEntry(t, episodic)
	require.Equal(t, true, episodic["pinned"])
	require.Equal(t, "normal", episodic["priority"])
	res = e.sdk(t, acmeKey, "agent_other", "POST", "/api/v1/memory", createBody("agent_other", "invoice_processing", "batch_progress",
		map[string]any{"total": 1}, "working", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)

	list := func(q url.Values) []map[string]any {
		t.Helper()
		res := e.sdk(t, acmeKey, agent, "GET", "/api/v1/agents/"+agent+"/memory?"+q.Encode(), nil)
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		var out []map[string]any
		require.NoError(t, json.Unmarshal(res.body, &out), "a bare JSON array: %s", res.body)
		for _, m := range out {
			requireEntry(t, m)
		}
		return out
	}
	keys := func(es []map[string]any) []string {
		var out []string
		for _, e := range es {
			out = append(out, e["key"].(string))
		}
		return out
	}
	// The SDK's list_memory sends every parameter, empty when unset.
	require.Equal(t, []string{"batch_progress", "stripe_thursdays"}, keys(list(url.Values{"limit": {"100"}, "offset": {"0"}})))
	require.Equal(t, []string{"batch_progress"}, keys(list(url.Values{"namespace": {"invoice_processing"}, "memory_type": {""}, "tags": {""}, "limit": {"100"}, "offset": {"0"}})))
	require.Equal(t, []string{"stripe_thursdays"}, keys(list(url.Values{"memory_type": {"episodic"}})))
	require.Equal(t, []string{"batch_progress"}, keys(list(url.Values{"tags": {"batch,invoices"}})))
	require.Equal(t, []string{"batch_progress"}, keys(list(url.Values{"tags": {"batch", "invoices"}})), "repeated")
	require.Empty(t, list(url.Values{"tags": {"batch,stripe"}}))
	require.Equal(t, []string{"stripe_thursdays"}, keys(list(url.Values{"limit": {"1"}, "offset": {"1"}})))

	// update_memory: a bare integer If-Match.
	patch := map[string]any{"value": map[string]any{"total": 47, "completed": 24, "last_id": "inv_790"}, "tags": []string{"batch", "invoices", "in-progress"}}
	res = e.sdk(t, acmeKey, agent, "PATCH", "/api/v1/memory/"+id, patch, "If-Match", "1")
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	updated := res.object(t)
	requireEntry(t, updated)
	require.Equal(t, 2.0, updated["version"])
	require.Equal(t, map[string]any{"total": 47.0, "completed": 24.0, "last_id": "inv_790"}, updated["value"])
	require.Equal(t, []any{"batch", "invoices", "in-progress"}, updated["tags"])
	require.Equal(t, created["created_at"], updated["created_at"])
	require.Equal(t, created["scope"], updated["scope"])

	// A stale version: 409 with message and current_version, and the word
	// the SDK takes for a lease conflict nowhere, even when the entry
	// holds it.
	res = e.sdk(t, acmeKey, agent, "PATCH", "/api/v1/memory/"+id, map[string]any{"value": map[string]any{"lease": "x"}}, "If-Match", "1")
	require.Equal(t, http.StatusConflict, res.status, "%s", res.body)
	conflict := res.object(t)
	require.NotEmpty(t, conflict["message"])
	require.Equal(t, 2.0, conflict["current_version"])
	require.NotContains(t, strings.ToLower(string(res.body)), "lease")
	requireEntry(t, conflict["current"].(map[string]any))

	res = e.sdk(t, acmeKey, agent, "PATCH", "/api/v1/memory/"+id, map[string]any{"value": map[string]any{"lease_id": "l1"}}, "If-Match", "2")
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	res = e.sdk(t, acmeKey, agent, "PATCH", "/api/v1/memory/"+id, patch, "If-Match", "2")
	require.Equal(t, http.StatusConflict, res.status, "%s", res.body)
	require.NotContains(t, strings.ToLower(string(res.body)), "lease", "the current entry holds the word: it is left out")
	require.Equal(t, 3.0, res.object(t)["current_version"])

	// Missing or not an integer: 428.
	for _, h := range [][]string{nil, {"If-Match", "abc"}, {"If-Match", "*"}, {"If-Match", "0"}} {
		res = e.sdk(t, acmeKey, agent, "PATCH", "/api/v1/memory/"+id, patch, h...)
		require.Equal(t, http.StatusPreconditionRequired, res.status, "%v: %s", h, res.body)
		require.NotEmpty(t, res.object(t)["message"])
	}

	// delete_memory.
	res = e.sdk(t, acmeKey, agent, "DELETE", "/api/v1/memory/"+id, nil)
	require.Equal(t, http.StatusNoContent, res.status, "%s", res.body)
	res = e.sdk(t, acmeKey, agent, "GET", "/api/v1/memory/"+id, nil)
	require.Equal(t, http.StatusNotFound, res.status, "%s", res.body)
	require.NotEmpty(t, res.object(t)["message"])
	require.Equal(t, []string{"stripe_thursdays"}, keys(list(nil)))
}

// A 400 carries message and errors, as the SDK's ValidationError reads
// them; nothing is written.
func TestBadRequest(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	for _, body := range []map[string]any{
		{"agent_id": "a", "key": "k", "value": map[string]any{}},
		{"agent_id": "a", "namespace": "n", "key": "k", "value": "not an object"},
		{"agent_id": "a", "namespace": "n", "key": "k", "value": map[string]any{}, "memory_type": "procedural"},
		{"agent_id": "a", "namespace": "n", "key": "k", "value": map[string]any{}, "ttl": "duration:forever"},
		{"agent_id": "a", "namespace": "n", "key": "k", "value": map[string]any{}, "priority": "urgent", "sensitivity": "secret"},
	} {
		res := e.sdk(t, acmeKey, "a", "POST", "/api/v1/memory", body)
		require.Equal(t, http.StatusBadRequest, res.status, "%v: %s", body, res.body)
		m := res.object(t)
		require.NotEmpty(t, m["message"])
		errs, ok := m["errors"].([]any)
		require.True(t, ok, "%s", res.body)
		require.NotEmpty(t, errs)
		for _, fe := range errs {
			require.NotEmpty(t, fe.(map[string]any)["field"])
			require.NotEmpty(t, fe.(map[string]any)["message"])
		}
	}
	res := e.sdk(t, acmeKey, "a", "POST", "/api/v1/memory", createBody("a", "n", "k", map[string]any{"v": 1}, "working", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	id := res.object(t)["id"].(string)
	res = e.sdk(t, acmeKey, "a", "PATCH", "/api/v1/memory/"+id, map[string]any{"ttl": "duration:PT1H", "value": 3, "priority": "urgent"}, "If-Match", "1")
	require.Equal(t, http.StatusBadRequest, res.status, "%s", res.body)
	require.Len(t, res.object(t)["errors"], 3)
	res = e.sdk(t, acmeKey, "a", "POST", "/api/v1/memory/batch", map[string]any{"entries": []any{
		createBody("a", "n", "k2", map[string]any{}, "working", nil),
		map[string]any{"id": id, "version": 1, "namespace": "moved"}}})
	require.Equal(t, http.StatusBadRequest, res.status, "%s", res.body)
	require.Equal(t, "entries/1/namespace", res.object(t)["errors"].([]any)[0].(map[string]any)["field"])
	res = e.sdk(t, acmeKey, "a", "GET", "/api/v1/memory/"+id, nil)
	require.Equal(t, 1.0, res.object(t)["version"], "nothing was written")
	require.Equal(t, 0.0, e.sdk(t, acmeKey, "a", "GET", "/api/v1/memory?key=k2", nil).object(t)["total"])

	res = e.sdk(t, acmeKey, "a", "GET", "/api/v1/memory?limit=5000&memory_type=x", nil)
	require.Equal(t, http.StatusBadRequest, res.status, "%s", res.body)
	require.Len(t, res.object(t)["errors"], 2)
	res = e.sdk(t, acmeKey, "a", "GET", "/api/v1/agents/nobody/memory", nil)
	require.Equal(t, "[]\n", string(res.body))
	res = e.sdk(t, acmeKey, "a", "GET", "/api/v1/intents", nil)
	require.Equal(t, http.StatusNotFound, res.status)
	require.NotEmpty(t, res.object(t)["message"], "an unknown route in the shape the SDK reads")
	res = e.sdk(t, "", "a", "GET", "/api/v1/agents/a/memory", nil)
	require.Equal(t, http.StatusUnauthorized, res.status)
	res = e.sdk(t, "wrong-key-0123456789", "a", "GET", "/api/v1/agents/a/memory", nil)
	require.Equal(t, http.StatusUnauthorized, res.status)
	require.NotEmpty(t, res.object(t)["message"])
}

// (agent, namespace, key) is unique (RFC-0015 §1.2), under concurrency
// too: of many creates at once, one wins and the others are 409s naming
// the winner's version. A semantic entry's key is unique in its namespace
// whatever its agent; a deleted entry frees its key.
func TestUniqueKey(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	const n = 8
	var wg sync.WaitGroup
	statuses := make([]int, n)
	bodies := make([][]byte, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "k", map[string]any{"i": i}, "episodic", nil))
			statuses[i], bodies[i] = res.status, res.body
		}()
	}
	wg.Wait()
	var created, conflicts int
	for i, s := range statuses {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
			conflicts++
			var m map[string]any
			require.NoError(t, json.Unmarshal(bodies[i], &m))
			require.Equal(t, 1.0, m["current_version"], "%s", bodies[i])
		default:
			t.Fatalf("create %d: %d %s", i, s, bodies[i])
		}
	}
	require.Equal(t, 1, created)
	require.Equal(t, n-1, conflicts)

	// Another agent may have the same namespace and key.
	res := e.sdk(t, acmeKey, "a2", "POST", "/api/v1/memory", createBody("a2", "ns", "k", map[string]any{}, "episodic", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)

	// Semantic memory belongs to no agent: (namespace, key) is unique.
	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "company_policies", "threshold", map[string]any{"usd": 10000}, "semantic", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	fact := res.object(t)
	res = e.sdk(t, acmeKey, "a2", "POST", "/api/v1/memory", createBody("a2", "company_policies", "threshold", map[string]any{"usd": 5}, "semantic", nil))
	require.Equal(t, http.StatusConflict, res.status, "%s", res.body)
	require.Equal(t, fact["id"], res.object(t)["current"].(map[string]any)["id"])

	res = e.sdk(t, acmeKey, "a1", "DELETE", "/api/v1/memory/"+fact["id"].(string), nil)
	require.Equal(t, http.StatusNoContent, res.status, "%s", res.body)
	res = e.sdk(t, acmeKey, "a2", "POST", "/api/v1/memory", createBody("a2", "company_policies", "threshold", map[string]any{"usd": 5}, "semantic", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
}

// GET /api/v1/memory (RFC-0015 §4): filters, tags with AND and OR,
// namespace prefixes, task scope, pinned, update times and pagination with
// the total.
func TestQuery(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	mk := func(agent, ns, key, tier string, extra map[string]any) map[string]any {
		t.Helper()
		res := e.sdk(t, acmeKey, agent, "POST", "/api/v1/memory", createBody(agent, ns, key, map[string]any{"k": key}, tier, extra))
		require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
		return res.object(t)
	}
	mk("a1", "billing.invoices", "w1", "working", map[string]any{"tags": []string{"batch", "in-progress"}, "scope": map[string]any{"task_id": "t1"}})
	mk("a1", "billing.invoices", "w2", "working", map[string]any{"tags": []string{"batch"}, "scope": map[string]any{"task_id": "t2"}})
	first := mk("a1", "billing.refunds", "e1", "episodic", map[string]any{"tags": []string{"refund"}, "pinned": true})
	e.advance(time.Minute)
	mk("a1", "learned", "e2", "episodic", map[string]any{"tags": []string{"stripe"}})
	mk("a2", "billing.invoices", "w1", "working", map[string]any{"tags": []string{"batch", "in-progress"}, "scope": map[string]any{"task_id": "t1"}})
	mk("a2", "policies", "s1", "semantic", map[string]any{"tags": []string{"policy"}})

	query := func(q string) (keys []string, total int) {
		t.Helper()
		res := e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory?"+q, nil)
		require.Equal(t, http.StatusOK, res.status, "%s: %s", q, res.body)
		var out struct {
			Entries       []map[string]any `json:"entries"`
			Total         int              `json:"total"`
			Limit, Offset int
		}
		require.NoError(t, json.Unmarshal(res.body, &out))
		for _, en := range out.Entries {
			requireEntry(t, en)
			keys = append(keys, en["agent_id"].(string)+"/"+en["key"].(string))
		}
		return keys, out.Total
	}
	cases := map[string][]string{
		"agent_id=a1&namespace=billing.invoices&tags=batch,in-progress&memory_type=working": {"a1/w1"},
		"agent_id=a1&namespace=billing.*":      {"a1/w1", "a1/w2", "a1/e1"},
		"agent_id=a1&tags_any=refund,stripe":   {"a1/e1", "a1/e2"},
		"scope.task_id=t1&memory_type=working": {"a1/w1", "a2/w1"},
		"agent_id=a1&pinned=true":              {"a1/e1"},
		"memory_type=semantic":                 {"a2/s1"},
		"key=w1":                               {"a1/w1", "a2/w1"},
		"agent_id=a1&updated_after=" + url.QueryEscape(first["updated_at"].(string)): {"a1/e2"},
	}
	for q, want := range cases {
		keys, total := query(q)
		require.Equal(t, want, keys, q)
		require.Equal(t, len(want), total, q)
	}
	keys, total := query("agent_id=a1&limit=2&offset=1")
	require.Equal(t, []string{"a1/w2", "a1/e1"}, keys)
	require.Equal(t, 4, total)
}

// Batch create and update is all or none; batch delete removes what a
// filter selects.
func TestBatch(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	batch := func(entries ...map[string]any) answer {
		return e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory/batch", map[string]any{"entries": entries})
	}
	res := batch(createBody("a1", "ns", "k1", map[string]any{"n": 1}, "working", nil),
		createBody("a1", "ns", "k2", map[string]any{"n": 2}, "episodic", map[string]any{"tags": []string{"x"}}))
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	var out struct{ Entries []map[string]any }
	require.NoError(t, json.Unmarshal(res.body, &out))
	require.Len(t, out.Entries, 2)
	k1 := out.Entries[0]

	// An invalid item: nothing is written.
	res = batch(createBody("a1", "ns", "k3", map[string]any{"n": 3}, "working", nil), map[string]any{"namespace": "ns"})
	require.Equal(t, http.StatusBadRequest, res.status, "%s", res.body)
	require.NotEmpty(t, res.object(t)["errors"])
	res = e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory?agent_id=a1&key=k3", nil)
	require.Equal(t, 0.0, res.object(t)["total"])

	// Upsert by key, and update by id at a version.
	res = batch(createBody("a1", "ns", "k1", map[string]any{"n": 10}, "working", nil),
		map[string]any{"id": out.Entries[1]["id"], "version": 1, "value": map[string]any{"n": 20}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	var up struct{ Entries []map[string]any }
	require.NoError(t, json.Unmarshal(res.body, &up))
	require.Equal(t, k1["id"], up.Entries[0]["id"])
	require.Equal(t, 2.0, up.Entries[0]["version"])
	require.Equal(t, map[string]any{"n": 20.0}, up.Entries[1]["value"])

	// A stale version in the middle: the item before it is undone, and the
	// new entry after it never written.
	res = batch(createBody("a1", "ns", "k1", map[string]any{"n": 100}, "working", nil),
		map[string]any{"id": out.Entries[1]["id"], "version": 1, "value": map[string]any{"n": 200}},
		createBody("a1", "ns", "k4", map[string]any{"n": 4}, "working", nil))
	require.Equal(t, http.StatusConflict, res.status, "%s", res.body)
	require.Equal(t, 2.0, res.object(t)["current_version"])
	res = e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/"+k1["id"].(string), nil)
	require.Equal(t, map[string]any{"n": 10.0}, res.object(t)["value"], "undone")
	res = e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory?agent_id=a1&key=k4", nil)
	require.Equal(t, 0.0, res.object(t)["total"])

	// Delete by filter.
	res = e.sdk(t, acmeKey, "a1", "DELETE", "/api/v1/memory/batch", nil)
	require.Equal(t, http.StatusBadRequest, res.status, "a filter is required: %s", res.body)
	res = e.sdk(t, acmeKey, "a1", "DELETE", "/api/v1/memory/batch?agent_id=a1&tags=x", nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	require.Equal(t, 1.0, res.object(t)["deleted"])
	res = e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory?agent_id=a1", nil)
	require.Equal(t, 1.0, res.object(t)["total"])
}

// A tenant's key never reads, lists, updates or deletes another tenant's
// entries.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	res := e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "k", map[string]any{"secret": 1}, "semantic", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	id := res.object(t)["id"].(string)

	require.Equal(t, http.StatusNotFound, e.sdk(t, globexKey, "a1", "GET", "/api/v1/memory/"+id, nil).status)
	require.Equal(t, http.StatusNotFound, e.sdk(t, globexKey, "a1", "PATCH", "/api/v1/memory/"+id, map[string]any{"value": map[string]any{}}, "If-Match", "1").status)
	require.Equal(t, http.StatusNotFound, e.sdk(t, globexKey, "a1", "DELETE", "/api/v1/memory/"+id, nil).status)
	require.Equal(t, "[]\n", string(e.sdk(t, globexKey, "a1", "GET", "/api/v1/agents/a1/memory", nil).body))
	require.Equal(t, 0.0, e.sdk(t, globexKey, "a1", "GET", "/api/v1/memory?memory_type=semantic", nil).object(t)["total"])
	// The same key in the other tenant is its own.
	res = e.sdk(t, globexKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "k", map[string]any{}, "semantic", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	require.Equal(t, http.StatusOK, e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/"+id, nil).status)

	// Another agent reads an agent's working memory (a coordinator, a
	// replacement, §8) but does not write it.
	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "w", map[string]any{}, "working", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	w := res.object(t)["id"].(string)
	require.Equal(t, http.StatusOK, e.sdk(t, acmeKey, "a2", "GET", "/api/v1/memory/"+w, nil).status)
	res = e.sdk(t, acmeKey, "a2", "PATCH", "/api/v1/memory/"+w, map[string]any{"value": map[string]any{}}, "If-Match", "1")
	require.Equal(t, http.StatusForbidden, res.status, "%s", res.body)
	require.Equal(t, http.StatusForbidden, e.sdk(t, acmeKey, "a2", "DELETE", "/api/v1/memory/"+w, nil).status)

	// The caller's key decides, with engram's roles: an executor key of
	// agent a1 reads and writes a1's entries (working memory is its own
	// session's), and nothing of another agent's.
	res = e.sdk(t, executorKey, "a1", "GET", "/api/v1/memory/"+w, nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	res = e.sdk(t, executorKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "mine", map[string]any{}, "working", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	res = e.sdk(t, acmeKey, "a2", "POST", "/api/v1/memory", createBody("a2", "ns", "theirs", map[string]any{}, "working", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	theirs := res.object(t)["id"].(string)
	require.Equal(t, http.StatusForbidden, e.sdk(t, executorKey, "a1", "GET", "/api/v1/memory/"+theirs, nil).status)
	res = e.sdk(t, executorKey, "a2", "POST", "/api/v1/memory", createBody("a2", "ns", "forged", map[string]any{}, "working", nil))
	require.Equal(t, http.StatusForbidden, res.status, "%s", res.body)
	var mine []map[string]any
	require.NoError(t, json.Unmarshal(e.sdk(t, executorKey, "a1", "GET", "/api/v1/agents/a2/memory", nil).body, &mine))
	require.Empty(t, mine)
}

// An entry is never answered once its ttl or expires_at has passed.
func TestTTL(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	res := e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "day", map[string]any{}, "episodic", map[string]any{"ttl": "duration:PT24H"}))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	day := res.object(t)
	require.Equal(t, "duration:PT24H", day["ttl"])
	created, err := time.Parse(time.RFC3339Nano, day["created_at"].(string))
	require.NoError(t, err)
	expires, err := time.Parse(time.RFC3339Nano, day["expires_at"].(string))
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, expires.Sub(created).Round(time.Second))

	at := e.clock.Load().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "abs", map[string]any{}, "working",
		map[string]any{"ttl": "duration:PT24H", "expires_at": at}))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	abs := res.object(t)
	got, err := time.Parse(time.RFC3339Nano, abs["expires_at"].(string))
	require.NoError(t, err)
	require.Equal(t, at, got.Format(time.RFC3339), "expires_at takes precedence over ttl")
	// A naive timestamp, as Python's isoformat writes one, is UTC.
	naive := e.clock.Load().Add(90 * time.Minute).UTC()
	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "naive", map[string]any{}, "working",
		map[string]any{"expires_at": naive.Format("2006-01-02T15:04:05.000000")}))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	require.Equal(t, naive.Truncate(time.Microsecond).Format(openintent.TimeFormat), res.object(t)["expires_at"])
	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "forever", map[string]any{}, "episodic", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)

	e.advance(3 * time.Hour)
	require.Equal(t, http.StatusNotFound, e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/"+abs["id"].(string), nil).status)
	require.Equal(t, http.StatusOK, e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/"+day["id"].(string), nil).status)
	e.advance(22 * time.Hour)
	require.Equal(t, http.StatusNotFound, e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/"+day["id"].(string), nil).status)
	var list []map[string]any
	require.NoError(t, json.Unmarshal(e.sdk(t, acmeKey, "a1", "GET", "/api/v1/agents/a1/memory", nil).body, &list))
	require.Len(t, list, 1)
	require.Equal(t, "forever", list[0]["key"])
	// Its key is free again: the expired entry's record, which decay has
	// not expired yet, is removed then.
	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "abs", map[string]any{}, "working", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	res = e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/events/"+abs["id"].(string), nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	require.Contains(t, string(res.body), `"memory.expired"`)
}

// Episodic memory at capacity evicts its least recently updated entry,
// lower priority first, never a pinned one; all pinned, and working memory
// at its task's limit, answer 429.
func TestCapacity(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{EpisodicCapacity: 3, WorkingCapacity: 2})
	mk := func(key, tier string, extra map[string]any) answer {
		t.Helper()
		e.advance(time.Second)
		return e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", key, map[string]any{}, tier, extra))
	}
	id := func(res answer) string { return res.object(t)["id"].(string) }
	pinned := mk("pinned", "episodic", map[string]any{"pinned": true})
	old := mk("old", "episodic", map[string]any{"priority": "high"})
	low := mk("low", "episodic", map[string]any{"priority": "low"})
	require.Equal(t, http.StatusCreated, low.status, "%s", low.body)
	// Touching "old" does not save it from a lower priority's eviction.
	e.advance(time.Second)
	require.Equal(t, http.StatusOK, e.sdk(t, acmeKey, "a1", "PATCH", "/api/v1/memory/"+id(old), map[string]any{"value": map[string]any{"n": 1}}, "If-Match", "1").status)

	require.Equal(t, http.StatusCreated, mk("new1", "episodic", map[string]any{"priority": "high"}).status)
	require.Equal(t, http.StatusNotFound, e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/"+id(low), nil).status, "low priority goes first")
	require.Equal(t, http.StatusCreated, mk("new2", "episodic", map[string]any{"priority": "high"}).status)
	require.Equal(t, http.StatusNotFound, e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/"+id(old), nil).status, "then the least recently updated")
	require.Equal(t, http.StatusOK, e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/"+id(pinned), nil).status)

	res := e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/events/"+id(old), nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	var ev struct{ Events []map[string]any }
	require.NoError(t, json.Unmarshal(res.body, &ev))
	var kinds []string
	for _, x := range ev.Events {
		kinds = append(kinds, x["type"].(string))
		require.Regexp(t, timestamp, x["timestamp"])
	}
	require.Equal(t, []string{"memory.created", "memory.updated", "memory.evicted"}, kinds)

	// All pinned: 429.
	b := setup(t, openintent.Config{EpisodicCapacity: 1})
	res = b.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "p", map[string]any{}, "episodic", map[string]any{"pinned": true}))
	require.Equal(t, http.StatusCreated, res.status)
	res = b.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "q", map[string]any{}, "episodic", nil))
	require.Equal(t, http.StatusTooManyRequests, res.status, "%s", res.body)
	require.Equal(t, 1.0, res.object(t)["max_capacity"])

	// Working memory: a limit per task.
	task := map[string]any{"scope": map[string]any{"task_id": "t1"}}
	require.Equal(t, http.StatusCreated, mk("w1", "working", task).status)
	require.Equal(t, http.StatusCreated, mk("w2", "working", task).status)
	res = mk("w3", "working", task)
	require.Equal(t, http.StatusTooManyRequests, res.status, "%s", res.body)
	m := res.object(t)
	require.Equal(t, 2.0, m["current_count"])
	require.Equal(t, 2.0, m["max_capacity"])
	require.Equal(t, http.StatusCreated, mk("w3", "working", map[string]any{"scope": map[string]any{"task_id": "t2"}}).status)
}

// A completed task's working memory is archived (a memory.archived event
// with its snapshot) and cleared; the summary and namespaces count what
// is left.
func TestArchiveSummaryNamespaces(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	for _, k := range []string{"a", "b"} {
		res := e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", k, map[string]any{"k": k}, "working",
			map[string]any{"scope": map[string]any{"task_id": "t1", "intent_id": "i1"}, "ttl": "task_lifetime", "tags": []string{"x"}}))
		require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	}
	res := e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "patterns", "p", map[string]any{}, "episodic", map[string]any{"pinned": true}))
	require.Equal(t, http.StatusCreated, res.status)
	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "company_policies", "threshold", map[string]any{}, "semantic", nil))
	require.Equal(t, http.StatusCreated, res.status)

	res = e.sdk(t, acmeKey, "a1", "GET", "/api/v1/agents/a1/memory/summary", nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	sum := res.object(t)
	require.Equal(t, "a1", sum["agent_id"])
	require.Equal(t, 2.0, sum["working"].(map[string]any)["entry_count"])
	require.Equal(t, []any{"t1"}, sum["working"].(map[string]any)["tasks_with_memory"])
	require.Equal(t, 1.0, sum["episodic"].(map[string]any)["entry_count"])
	require.Equal(t, 1.0, sum["episodic"].(map[string]any)["pinned_count"])
	require.Equal(t, 1000.0, sum["episodic"].(map[string]any)["capacity"])
	require.Equal(t, []any{"company_policies"}, sum["semantic_namespaces_accessible"])

	res = e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/namespaces", nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	require.Len(t, res.object(t)["namespaces"], 1)
	require.Equal(t, http.StatusOK, e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/namespaces/company_policies", nil).status)
	require.Equal(t, http.StatusNotFound, e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/namespaces/none", nil).status)

	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/tasks/t1/memory/archive", nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	ev := res.object(t)
	require.Equal(t, "memory.archived", ev["type"])
	require.Equal(t, "t1", ev["task_id"])
	require.Equal(t, "i1", ev["intent_id"])
	require.Regexp(t, timestamp, ev["timestamp"])
	data := ev["data"].(map[string]any)
	require.Equal(t, 2.0, data["entries_archived"])
	snap := data["snapshot"].([]any)
	require.Len(t, snap, 2)
	require.Equal(t, map[string]any{"namespace": "ns", "key": "a", "value": map[string]any{"k": "a"}, "tags": []any{"x"}}, snap[0])

	res = e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory?scope.task_id=t1", nil)
	require.Equal(t, 0.0, res.object(t)["total"])
	var list []map[string]any
	require.NoError(t, json.Unmarshal(e.sdk(t, acmeKey, "a1", "GET", "/api/v1/agents/a1/memory", nil).body, &list))
	require.Equal(t, []string{"p", "threshold"}, func() (out []string) {
		for _, x := range list {
			out = append(out, x["key"].(string))
		}
		slices.Sort(out)
		return out
	}())
}
