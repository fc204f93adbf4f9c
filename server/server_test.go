package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/logtest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

const (
	acmeKey  = "acme-key-0123456789"
	otherKey = "other-key-0123456789"
	opsKey   = "operator-key-0123456789"
)

// testKeys are two tenants' keys and an operator's.
var testKeys = []server.Key{
	{Tenant: "acme", Name: "acme-test", Secret: acmeKey, Role: server.RoleCurator},
	{Tenant: "other", Name: "other-test", Secret: otherKey, Role: server.RoleCurator},
	{Name: "ops-test", Secret: opsKey, Role: server.RoleOperator},
}

type env struct {
	t   *testing.T
	url string
	db  *pgtest.Schema
}

func setup(t *testing.T) *env {
	t.Helper()
	db := pgtest.NewSchema(t)
	reg := prometheus.NewRegistry()
	wr := revise.New(db.Pool, revise.Config{MaxPayloadBytes: 2048, Registry: reg})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, tenant))
	}
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr,
		Keys:     testKeys,
		Ready:    db.Pool.Ping,
		Registry: reg,
	}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, db: db}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body, v), string(r.body))
}

// problem decodes a problem response and checks its content type.
func (r response) problem(t *testing.T) server.Problem {
	t.Helper()
	require.Equal(t, "application/problem+json", r.header.Get("Content-Type"), string(r.body))
	var p server.Problem
	r.decode(t, &p)
	require.Equal(t, r.status, p.Status)
	return p
}

func (e *env) do(method, path, key string, body any, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	require.NoError(e.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func factBody(object any, conds map[string]any) map[string]any {
	validity := map[string]any{"mode": "global"}
	if conds != nil {
		validity = map[string]any{"mode": "conditional", "conditions": conds}
	}
	return map[string]any{"type": "semantic", "confidence": 0.9, "payload": map[string]any{
		"kind": "semantic", "subject": "user", "predicate": "prefers_language", "object": object, "validity": validity}}
}

func (e *env) count(sql string) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.db.Pool.QueryRow(context.Background(), sql).Scan(&n))
	return n
}

// The README's walk-through: create a fact, fork it by condition, supersede
// one branch, read history and audit, and read the list as it was before.
func TestWalkThrough(t *testing.T) {
	t.Parallel()
	e := setup(t)

	res := e.do("POST", "/v1/records", acmeKey, factBody("go", nil))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var f memory.Record
	res.decode(t, &f)
	require.Equal(t, "/v1/records/"+f.ID.String(), res.header.Get("Location"))
	require.Equal(t, memory.DefaultSalience, f.Salience)
	require.Equal(t, 0.9, f.Confidence)
	beforeFork := time.Now().UTC()

	res = e.do("POST", "/v1/records/"+f.ID.String()+":fork", acmeKey, map[string]any{
		"rationale": "the user uses Python for data work",
		"variants":  []any{factBody("go", map[string]any{"project_kind": "backend"})["payload"], factBody("python", map[string]any{"project_kind": "data_science"})["payload"]},
	})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, "variants are records, not bare payloads: %s", res.body)

	res = e.do("POST", "/v1/records/"+f.ID.String()+":fork", acmeKey, map[string]any{
		"rationale": "the user uses Python for data work",
		"variants":  []any{factBody("go", map[string]any{"project_kind": "backend"}), factBody("python", map[string]any{"project_kind": "data_science"})},
	}, "X-Engram-Actor", "agent-7")
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var forked struct {
		Forked  memory.Record   `json:"forked"`
		Records []memory.Record `json:"records"`
	}
	res.decode(t, &forked)
	require.Equal(t, memory.Superseded, forked.Forked.Status)
	require.Len(t, forked.Records, 2)

	res = e.do("POST", "/v1/records/"+forked.Records[1].ID.String()+":supersede", acmeKey, map[string]any{
		"version": 1, "rationale": "switched to Julia", "record": factBody("julia", map[string]any{"project_kind": "data_science"}),
	})
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	res = e.do("GET", "/v1/records?subject=user&predicate=prefers_language", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status)
	var page api.RecordPage
	res.decode(t, &page)
	require.Len(t, page.Records, 2)

	res = e.do("GET", "/v1/records/"+f.ID.String()+"/history", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status)
	var hist struct{ Versions []api.RecordVersion }
	res.decode(t, &hist)
	require.Len(t, hist.Versions, 2)

	res = e.do("GET", "/v1/records/"+f.ID.String()+"/audit", acmeKey, nil)
	var audit struct{ Entries []api.AuditEntry }
	res.decode(t, &audit)
	require.Len(t, audit.Entries, 2)
	require.Equal(t, "fork", audit.Entries[1].Action)
	require.Equal(t, "agent-7 via key:acme-test", audit.Entries[1].Actor)
	require.Equal(t, "the user uses Python for data work", audit.Entries[1].Rationale)

	res = e.do("GET", "/v1/records?subject=user&as_of="+beforeFork.Format(time.RFC3339Nano), acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res.decode(t, &page)
	require.Len(t, page.Records, 1)
	require.Equal(t, f.ID, page.Records[0].ID)
	require.Equal(t, memory.Active, page.Records[0].Status)

	res = e.do("GET", "/v1/records/"+f.ID.String()+"?as_of="+beforeFork.Format(time.RFC3339Nano), acmeKey, nil)
	var then memory.Record
	res.decode(t, &then)
	require.Equal(t, 1, then.Version)

	res = e.do("GET", "/v1/records/"+forked.Records[1].ID.String()+"/relations", acmeKey, nil)
	var rels struct{ Relations []api.Edge }
	res.decode(t, &rels)
	require.Len(t, rels.Relations, 2, "forked_from out, supersedes in")
}

// A stale or unknown key gets a 401 that says so, apart from a missing
// key's, and never quotes the key; a revoked key the same.
func TestUnknownKeyIsNotAMissingKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, h := range [][]string{nil, {"Authorization", "Bearer "}, {"Authorization", "Basic eDp5"}} {
		res := e.do("GET", "/v1/records", "", nil, h...)
		require.Equal(t, http.StatusUnauthorized, res.status)
		require.Contains(t, res.problem(t).Detail, "send an API key as Authorization: Bearer <key>", h)
	}
	const stale = "ek_0123456789abcdef-stale"
	res := e.do("GET", "/v1/records", stale, nil)
	require.Equal(t, http.StatusUnauthorized, res.status)
	require.Contains(t, res.header.Get("WWW-Authenticate"), "Bearer")
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:unauthorized", p.Type)
	require.Contains(t, p.Detail, "unknown or revoked")
	require.NotContains(t, string(res.body), "0123456789abcdef")

	res = e.do("POST", "/v1/keys", opsKey, map[string]any{"name": "soon-revoked", "tenant": "acme", "role": "executor", "agent_id": "agent-1"})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var made struct {
		Secret string `json:"secret"`
	}
	res.decode(t, &made)
	require.Equal(t, http.StatusOK, e.do("POST", "/v1/keys/soon-revoked:revoke", opsKey, nil).status)
	res = e.do("GET", "/v1/records", made.Secret, nil)
	require.Equal(t, http.StatusUnauthorized, res.status)
	require.Contains(t, res.problem(t).Detail, "unknown or revoked")
	require.NotContains(t, string(res.body), made.Secret)
}

func TestAuthenticationAndTenants(t *testing.T) {
	t.Parallel()
	e := setup(t)

	for _, key := range []string{"", "wrong-key-0123456789"} {
		res := e.do("GET", "/v1/records", key, nil)
		require.Equal(t, http.StatusUnauthorized, res.status)
		require.Contains(t, res.header.Get("WWW-Authenticate"), "Bearer")
		res.problem(t)
	}

	res := e.do("POST", "/v1/records", acmeKey, factBody("go", nil))
	require.Equal(t, http.StatusCreated, res.status)
	var f memory.Record
	res.decode(t, &f)

	res = e.do("GET", "/v1/records/"+f.ID.String(), otherKey, nil)
	require.Equal(t, http.StatusNotFound, res.status)
	res.problem(t)
	res = e.do("POST", "/v1/records/"+f.ID.String()+":retract", otherKey, map[string]any{})
	require.Equal(t, http.StatusNotFound, res.status)
	res = e.do("GET", "/v1/records", otherKey, nil)
	var page api.RecordPage
	res.decode(t, &page)
	require.Empty(t, page.Records)
}

// Each kind of bad input gets its precise problem, and nothing is stored.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	huge := factBody(strings.Repeat("x", 4096), nil)

	cases := []struct {
		name    string
		body    any
		headers []string
		status  int
		kind    string
		pointer string
	}{
		{"malformed", `{"type": "semantic",`, nil, 400, "malformed-json", ""},
		{"two values", `{} {}`, nil, 400, "malformed-json", ""},
		{"empty", ``, nil, 400, "malformed-json", ""},
		{"wrong type", map[string]any{"type": "semantic", "confidence": "high"}, nil, 422, "validation-failed", "/confidence"},
		{"unknown field", map[string]any{"type": "semantic", "colour": "red"}, nil, 422, "validation-failed", "/colour"},
		{"unknown type", map[string]any{"type": "dream", "payload": map[string]any{"kind": "dream"}}, nil, 422, "validation-failed", "/type"},
		{"schema", map[string]any{"type": "semantic", "confidence": 2, "payload": map[string]any{"kind": "semantic"}}, nil, 422, "validation-failed", "/confidence"},
		{"bad id", map[string]any{"id": "nope", "type": "semantic"}, nil, 422, "validation-failed", ""},
		{"too large", huge, nil, 413, "too-large", "/payload"},
		{"media type", `type=semantic`, []string{"Content-Type", "text/plain"}, 415, "unsupported-media-type", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.do("POST", "/v1/records", acmeKey, c.body, c.headers...)
			require.Equal(t, c.status, res.status, string(res.body))
			p := res.problem(t)
			require.Equal(t, "urn:engram:problem:"+c.kind, p.Type)
			if c.pointer != "" {
				require.NotEmpty(t, p.Errors)
				require.Equal(t, c.pointer, p.Errors[0].Pointer)
			}
		})
	}
	require.Zero(t, e.count("SELECT count(*) FROM records"))

	for _, q := range []string{"limit=0", "limit=x", "type=dream", "status=alive", "sensitivity=secret", "as_of=yesterday", "cursor=zzz"} {
		res := e.do("GET", "/v1/records?"+q, acmeKey, nil)
		require.Equal(t, http.StatusBadRequest, res.status, q)
		p := res.problem(t)
		require.Equal(t, "urn:engram:problem:invalid-parameter", p.Type, q)
		require.Equal(t, strings.Split(q, "=")[0], p.Errors[0].Parameter)
	}

	res := e.do("GET", "/v1/nothing-here", acmeKey, nil)
	require.Equal(t, http.StatusNotFound, res.status)
	res.problem(t)
	res = e.do("POST", "/v1/records/not-a-uuid:retract", acmeKey, map[string]any{})
	require.Equal(t, http.StatusNotFound, res.status)
	res = e.do("POST", "/v1/records/0190a1b2-0000-7000-8000-000000000000:explode", acmeKey, map[string]any{})
	require.Equal(t, http.StatusNotFound, res.status)
}

func TestUpdateWorkingMemory(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "working", "payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "planning"}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var w memory.Record
	res.decode(t, &w)
	next := map[string]any{"payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "executing"}}

	res = e.do("PATCH", "/v1/records/"+w.ID.String(), acmeKey, next, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = e.do("PATCH", "/v1/records/"+w.ID.String(), acmeKey, next, "If-Match", `"1"`)
	require.Equal(t, http.StatusConflict, res.status)
	require.Equal(t, "urn:engram:problem:version-conflict", res.problem(t).Type)
	res = e.do("PATCH", "/v1/records/"+w.ID.String(), acmeKey, next)
	require.Equal(t, http.StatusUnprocessableEntity, res.status, "the version is required")
	require.Equal(t, "/version", res.problem(t).Errors[0].Pointer)
}

func TestEpisodeAppendAndArtifacts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	req, err := http.NewRequest("POST", e.url+"/v1/artifacts", strings.NewReader("compiler output"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+acmeKey)
	req.Header.Set("Content-Type", "text/plain")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var a store.Artifact
	require.NoError(t, json.NewDecoder(res.Body).Decode(&a))
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode)

	got := e.do("GET", "/v1/artifacts/"+a.SHA256, acmeKey, nil)
	require.Equal(t, "compiler output", string(got.body))
	require.Equal(t, "text/plain", got.header.Get("Content-Type"))
	require.Equal(t, http.StatusNotFound, e.do("GET", "/v1/artifacts/"+a.SHA256, otherKey, nil).status)

	r := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "episodic", "payload": map[string]any{"kind": "episodic", "timeline": []any{}}})
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var ep memory.Record
	r.decode(t, &ep)
	r = e.do("POST", "/v1/records/"+ep.ID.String()+":append", acmeKey, map[string]any{
		"timeline":  []any{map[string]any{"t": "2026-01-01T00:00:00Z", "event_kind": "error", "ref": "evt://1"}},
		"artifacts": []string{a.SHA256}, "outcome": "failure",
	})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r = e.do("POST", "/v1/records/"+ep.ID.String()+":retract", acmeKey, map[string]any{})
	require.Equal(t, http.StatusConflict, r.status)
	require.Equal(t, "urn:engram:problem:not-allowed", r.problem(t).Type)
}

func TestHealthReadinessAndMetrics(t *testing.T) {
	t.Parallel()
	e := setup(t)
	require.Equal(t, http.StatusOK, e.do("GET", "/healthz", "", nil).status)
	require.Equal(t, http.StatusOK, e.do("GET", "/readyz", "", nil).status)
	e.do("POST", "/v1/records", acmeKey, factBody("go", nil))
	m := e.do("GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, m.status)
	require.Contains(t, string(m.body), `engram_http_request_duration_seconds_count{code="201",route="POST /v1/records"} 1`)
	require.Contains(t, string(m.body), `engram_revisions_total{action="create",layer="semantic"} 1`)
}

func TestMethodNotAllowedAndETag(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res := e.do("PUT", "/v1/records", acmeKey, map[string]any{})
	require.Equal(t, http.StatusMethodNotAllowed, res.status)
	require.Contains(t, res.header.Get("Allow"), "POST")
	require.Equal(t, "urn:engram:problem:method-not-allowed", res.problem(t).Type)

	res = e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "working", "payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "planning"}})
	var w memory.Record
	res.decode(t, &w)
	res = e.do("GET", "/v1/records/"+w.ID.String(), acmeKey, nil)
	require.Equal(t, `"1"`, res.header.Get("ETag"))
	res = e.do("PATCH", "/v1/records/"+w.ID.String(), acmeKey, map[string]any{"payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "done"}}, "If-Match", res.header.Get("ETag"))
	require.Equal(t, http.StatusOK, res.status, string(res.body))
}

func TestAppendAndEvidenceAreValidated(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "episodic", "payload": map[string]any{"kind": "episodic", "timeline": []any{}}})
	var ep memory.Record
	r.decode(t, &ep)
	r = e.do("POST", "/v1/records/"+ep.ID.String()+":append", acmeKey, map[string]any{"timeline": []any{map[string]any{}}})
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	p := r.problem(t)
	require.Len(t, p.Errors, 3)
	require.Equal(t, "/timeline/0/t", p.Errors[0].Pointer)

	r = e.do("POST", "/v1/records", acmeKey, factBody("go", nil))
	var f memory.Record
	r.decode(t, &f)
	r = e.do("POST", "/v1/records/"+f.ID.String()+":retract", acmeKey, map[string]any{"evidence": []any{map[string]any{"kind": "bogus"}}})
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Equal(t, "/evidence/0/kind", r.problem(t).Errors[0].Pointer)
	require.Equal(t, 2, e.count("SELECT count(*) FROM audit_log"), "nothing audited for the refused requests")
}

// The request log: a line a request with its method, path, status,
// duration and tenant, never its key, query or body; off when configured
// so.
func TestRequestLog(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, "acme"))
	serve := func(cfg server.Config) (string, *logtest.Buffer) {
		logs := &logtest.Buffer{}
		cfg.DB, cfg.Keys = db.Pool, testKeys
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		srv := httptest.NewServer(server.New(cfg))
		t.Cleanup(srv.Close)
		return srv.URL, logs
	}
	url, logs := serve(server.Config{})
	e := &env{t: t, url: url, db: db}
	const secret = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
	require.Equal(t, http.StatusCreated, e.do("POST", "/v1/records?note="+secret, acmeKey, factBody(secret, nil)).status)
	require.Equal(t, http.StatusUnauthorized, e.do("GET", "/v1/records", "stale-key-0123456789", nil).status)
	require.Equal(t, http.StatusOK, e.do("GET", "/healthz", "", nil).status)

	type line struct {
		Level, Msg, Method, Path, Tenant string
		Status                           int
		Duration                         *float64
	}
	var lines []line
	for l := range strings.Lines(logs.String()) {
		var v line
		require.NoError(t, json.Unmarshal([]byte(l), &v))
		if v.Msg == "request" {
			require.Equal(t, "INFO", v.Level)
			require.NotNil(t, v.Duration, l)
			v.Duration = nil
			lines = append(lines, v)
		}
	}
	require.Equal(t, []line{
		{Level: "INFO", Msg: "request", Method: "POST", Path: "/v1/records", Tenant: "acme", Status: 201},
		{Level: "INFO", Msg: "request", Method: "GET", Path: "/v1/records", Status: 401},
		{Level: "INFO", Msg: "request", Method: "GET", Path: "/healthz", Status: 200},
	}, lines)
	for _, s := range []string{secret, acmeKey, opsKey, "stale-key-0123456789"} {
		require.NotContains(t, logs.String(), s)
	}

	url, logs = serve(server.Config{NoRequestLog: true})
	e = &env{t: t, url: url, db: db}
	require.Equal(t, http.StatusOK, e.do("GET", "/v1/records", acmeKey, nil).status)
	require.NotContains(t, logs.String(), `"msg":"request"`)
}

// A body that leaves out every field is told about each of them, not
// only the first: a record's type and payload, an event's kind, agent and
// thread, a payload's own fields, each at its own pointer.
func TestEveryMissingFieldIsReported(t *testing.T) {
	t.Parallel()
	e := setupIngest(t, "", ingest.Config{})
	for _, tc := range []struct {
		path, body, detail string
		want               []server.FieldError
	}{
		{"/v1/records", `{}`, "2 invalid fields; see errors", []server.FieldError{
			{Pointer: "/payload", Message: "is required"},
			{Pointer: "/type", Message: `value must be one of "episodic", "working", "semantic", "competence", "plan_graph"`}}},
		{"/v1/records", `{"type": "semantic", "confidence": 3, "payload": {"kind": "semantic"}}`, "5 invalid fields; see errors", []server.FieldError{
			{Pointer: "/confidence", Message: "must be <= 1"},
			{Pointer: "/payload/object", Message: "is required"}, {Pointer: "/payload/predicate", Message: "is required"},
			{Pointer: "/payload/subject", Message: "is required"}, {Pointer: "/payload/validity", Message: "is required"}}},
		{"/v1/records", `{"type": "semantic", "payload": {"kind": "semantic", "subject": "u", "predicate": "p", "object": "o"}}`, "1 invalid field; see errors", []server.FieldError{
			{Pointer: "/payload/validity", Message: "is required"}}},
		{"/v1/events", `{}`, "3 invalid fields", []server.FieldError{
			{Pointer: "/agent_id", Message: "is required"}, {Pointer: "/kind", Message: "is required"}, {Pointer: "/thread_id", Message: "is required"}}},
	} {
		res := e.do("POST", tc.path, acmeKey, tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
		p := res.problem(t)
		require.Equal(t, tc.detail, p.Detail, tc.body)
		require.Equal(t, tc.want, p.Errors, tc.body)
	}
}
