package openwop_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/openwop"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

const (
	acmeKey  = "acme-key-0123456789"
	otherKey = "other-key-0123456789"
	opsKey   = "operator-key-0123456789"
	// Agent keys of acme: an executor whose agent is planner, an
	// orchestrator and a verifier.
	executorKey     = "acme-executor-0123456789"
	orchestratorKey = "acme-orchestrator-0123456789"
	verifierKey     = "acme-verifier-0123456789"
	// canary is an operator literal secret: a value that flowed through the
	// run's secret handling (SR-1).
	canary = "canary-sekrit-4f1d9a"
	// awsKey is AWS's documented example access key id.
	awsKey = "AKIAIOSFODNN7EXAMPLE"
)

// Schema $ids of the spec's files that package openwop does not embed.
const (
	capabilitiesSchemaID  = "https://openwop.dev/spec/v1/capabilities.schema.json"
	errorEnvelopeSchemaID = "https://openwop.dev/spec/v1/error-envelope.schema.json"
)

// The wire schemas of the OpenWOP spec (copied into schema/): every answer
// of the adapter is checked against them.
var wireSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	files := map[string]string{
		"memory-entry.schema.json":        openwop.EntrySchemaID,
		"memory-list-options.schema.json": openwop.ListOptionsSchemaID,
		"capabilities.schema.json":        capabilitiesSchemaID,
		"error-envelope.schema.json":      errorEnvelopeSchemaID,
		// capabilities.schema.json refers to these two.
		"prompt-kind.schema.json": "https://openwop.dev/spec/v1/prompt-kind.schema.json",
		"prompt-ref.schema.json":  "https://openwop.dev/spec/v1/prompt-ref.schema.json",
	}
	for file, id := range files {
		b, err := os.ReadFile(filepath.Join("schema", file))
		if err != nil {
			return nil, err
		}
		if err := c.AddResource(id, bytes.NewReader(b)); err != nil {
			return nil, err
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, id := range files {
		s, err := c.Compile(id)
		if err != nil {
			return nil, err
		}
		out[id] = s
	}
	return out, nil
})

func validate(t *testing.T, id string, raw []byte) {
	t.Helper()
	ss, err := wireSchemas()
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(raw, &doc), string(raw))
	require.NoError(t, ss[id].Validate(doc), "%s does not match %s", raw, id)
}

// clock is a settable clock for the server, which judges expiresAt by it.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

type env struct {
	t     *testing.T
	url   string
	clock *clock
}

// setup serves engramd's API, with the adapter mounted, over a fresh
// schema: two tenants' keys and an operator's, the policy's literal secret
// canary, and onSecret and the policy's on_secret as given.
func setup(t *testing.T, onSecret, policyOnSecret string) *env {
	t.Helper()
	return setupBudgets(t, onSecret, policyOnSecret, access.Budgets{})
}

// setupBudgets is setup with the write path's budgets.
func setupBudgets(t *testing.T, onSecret, policyOnSecret string, budgets access.Budgets) *env {
	t.Helper()
	db := pgtest.NewSchema(t)
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, tenant))
	}
	yaml := "secrets:\n  literals: [" + canary + "]\n"
	if policyOnSecret != "" {
		yaml += "  on_secret: " + policyOnSecret + "\n"
	}
	pol, err := policy.Parse([]byte(yaml), "test")
	require.NoError(t, err)
	c := &clock{}
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: revise.New(db.Pool, revise.Config{Budgets: budgets}),
		Keys: []server.Key{
			{Tenant: "acme", Name: "acme-test", Secret: acmeKey, Role: server.RoleCurator},
			{Tenant: "other", Name: "other-test", Secret: otherKey, Role: server.RoleCurator},
			{Name: "ops-test", Secret: opsKey, Role: server.RoleOperator},
			{Tenant: "acme", Name: "executor", Secret: executorKey, Role: server.RoleExecutor, Agent: "planner"},
			{Tenant: "acme", Name: "orchestrator", Secret: orchestratorKey, Role: server.RoleOrchestrator, Agent: "lead"},
			{Tenant: "acme", Name: "verifier", Secret: verifierKey, Role: server.RoleVerifier, Agent: "checker"},
		},
		Policy:  func() *policy.Policy { return pol },
		Now:     c.now,
		OpenWOP: openwop.Config{OnSecret: onSecret},
	}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, clock: c}
}

func (e *env) do(method, path, key string, body any) (int, []byte) {
	e.t.Helper()
	status, _, b := e.send(method, path, key, "application/json", body)
	return status, b
}

// send is do with the request's Content-Type, answering the response's
// headers too.
func (e *env) send(method, path, key, contentType string, body any) (int, http.Header, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			b, err = json.Marshal(body)
			require.NoError(e.t, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	require.NoError(e.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil && contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	require.Equal(e.t, "application/json", res.Header.Get("Content-Type"), "%s %s: %s", method, path, b)
	answered(method, path, res.StatusCode, b)
	return res.StatusCode, res.Header, b
}

// ref asks the host for acme's memoryRef of an agent and a namespace.
func (e *env) ref(agent, namespace string) string {
	e.t.Helper()
	return e.refFor(acmeKey, agent, namespace)
}

// refFor asks the host for the memoryRef of an agent and a namespace, with
// a tenant's key.
func (e *env) refFor(key, agent, namespace string) string {
	e.t.Helper()
	status, b := e.do("POST", "/openwop/v1/memory-refs", key, map[string]string{"agentId": agent, "namespace": namespace})
	require.Equal(e.t, http.StatusOK, status, string(b))
	var out struct{ MemoryRef string }
	require.NoError(e.t, json.Unmarshal(b, &out))
	if agent != "" {
		require.NotContains(e.t, out.MemoryRef, agent, "a memoryRef is opaque")
	}
	return out.MemoryRef
}

func entries(ref string) string { return "/openwop/v1/memory/" + url.PathEscape(ref) + "/entries" }

// put writes an entry and checks the answer is a valid MemoryEntry.
func (e *env) put(ref, key string, entry map[string]any) openwop.Entry {
	e.t.Helper()
	status, b := e.do("POST", entries(ref), key, entry)
	require.Equal(e.t, http.StatusCreated, status, string(b))
	validate(e.t, openwop.EntrySchemaID, b)
	var out openwop.Entry
	require.NoError(e.t, json.Unmarshal(b, &out))
	return out
}

// list lists a ref's entries with MemoryListOptions opts (checked against
// their schema) and a snapshot, checking each entry against its schema.
func (e *env) list(ref, key string, opts map[string]any, snapshot *time.Time) []openwop.Entry {
	e.t.Helper()
	q := url.Values{}
	if opts != nil {
		b, err := json.Marshal(opts)
		require.NoError(e.t, err)
		validate(e.t, openwop.ListOptionsSchemaID, b)
		for k, v := range opts {
			q.Set(k, strings.Trim(string(must(json.Marshal(v))), `"`))
		}
	}
	if snapshot != nil {
		q.Set("snapshot", snapshot.Format(time.RFC3339Nano))
	}
	status, b := e.do("GET", entries(ref)+"?"+q.Encode(), key, nil)
	require.Equal(e.t, http.StatusOK, status, string(b))
	var raw []json.RawMessage
	require.NoError(e.t, json.Unmarshal(b, &raw), "list answers a bare array: %s", b)
	require.NotNil(e.t, raw, "an empty list is [], not null")
	out := []openwop.Entry{}
	for _, r := range raw {
		validate(e.t, openwop.EntrySchemaID, r)
		var en openwop.Entry
		require.NoError(e.t, json.Unmarshal(r, &en))
		out = append(out, en)
	}
	return out
}

// get reads an entry: nil for null, a valid MemoryEntry otherwise.
func (e *env) get(ref, key, id string, snapshot *time.Time) *openwop.Entry {
	e.t.Helper()
	path := entries(ref) + "/" + id
	if snapshot != nil {
		path += "?snapshot=" + url.QueryEscape(snapshot.Format(time.RFC3339Nano))
	}
	status, b := e.do("GET", path, key, nil)
	require.Equal(e.t, http.StatusOK, status, string(b))
	if strings.TrimSpace(string(b)) == "null" {
		return nil
	}
	validate(e.t, openwop.EntrySchemaID, b)
	var out openwop.Entry
	require.NoError(e.t, json.Unmarshal(b, &out))
	return &out
}

func (e *env) delete(ref, key, id string) bool {
	e.t.Helper()
	status, b := e.do("DELETE", entries(ref)+"/"+id, key, nil)
	require.Equal(e.t, http.StatusOK, status, string(b))
	var out bool
	require.NoError(e.t, json.Unmarshal(b, &out), "delete answers a bare boolean: %s", b)
	return out
}

// fails sends a request that must fail with code, and returns the error's
// message.
func (e *env) fails(method, path, key string, body any, status int, code string) string {
	e.t.Helper()
	got, b := e.do(method, path, key, body)
	require.Equal(e.t, status, got, string(b))
	validate(e.t, errorEnvelopeSchemaID, b)
	var env struct {
		Error   string         `json:"error"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(e.t, dec.Decode(&env), "the OpenWOP error envelope: %s", b)
	require.Equal(e.t, code, env.Error, string(b))
	require.NotEmpty(e.t, env.Message)
	return env.Message
}

func ids(es []openwop.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The capability advertisement (RFC 0004 §B, as capabilities.schema.json
// has it now) is a whole discovery document: its four required root fields,
// and the memory adapter at the document root, agents.memoryBackends and
// memory, where a conformance suite reads them.
func TestOpenWOPCapabilities(t *testing.T) {
	t.Parallel()
	e := setup(t, "", "")
	status, b := e.do("GET", "/.well-known/openwop", "", nil)
	require.Equal(t, http.StatusOK, status)
	validate(t, capabilitiesSchemaID, b)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Equal(t, []any{"long-term"}, doc["agents"].(map[string]any)["memoryBackends"])
	require.Equal(t, map[string]any{"supported": true, "maxEntrySizeBytes": float64(openwop.MaxEntryBytes), "ttlSupported": true}, doc["memory"])
	for _, field := range []string{"protocolVersion", "supportedEnvelopes", "schemaVersions", "limits"} {
		require.Contains(t, doc, field)
	}
	require.NotContains(t, doc, "capabilities", "the adapter is advertised at the document root")
	vendor := doc["vendor"].(map[string]any)["engram"].(map[string]any)["memory"].(map[string]any)
	require.Equal(t, "redact", vendor["onSecret"])
	require.Equal(t, "snapshot", vendor["snapshotParameter"])

	e = setup(t, "", "reject")
	_, b = e.do("GET", "/.well-known/openwop", "", nil)
	validate(t, capabilitiesSchemaID, b)
	require.Contains(t, string(b), `"onSecret":"reject"`)
}

// put, get, list and delete by memoryRef; list answers newest first and
// filters by tag and limit.
func TestOpenWOPPutGetListDelete(t *testing.T) {
	t.Parallel()
	e := setup(t, "", "")
	ref := e.ref("planner", "project-x")
	require.NotEqual(t, ref, e.ref("planner", "project-y"))
	require.NotEqual(t, ref, e.ref("coder", "project-x"))

	exp := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	first := e.put(ref, acmeKey, map[string]any{"content": "the deploy script lives in ops/deploy.sh", "tags": []string{"source:session", "", "ops", "ops"}, "expiresAt": exp.Format(time.RFC3339)})
	require.Equal(t, "the deploy script lives in ops/deploy.sh", first.Content)
	require.Equal(t, []string{"source:session", "ops"}, first.Tags, "empty and repeated tags are dropped")
	require.NotNil(t, first.ExpiresAt)
	require.True(t, exp.Equal(*first.ExpiresAt))
	second := e.put(ref, acmeKey, map[string]any{"content": "staging is at 10.0.0.5"})
	require.Equal(t, []string{}, second.Tags)
	require.Nil(t, second.ExpiresAt)
	third := e.put(ref, acmeKey, map[string]any{"content": "tests need PostgreSQL", "tags": []string{"ops", "a,b"}})
	// Another namespace of the same agent is other memory.
	e.put(e.ref("planner", "project-y"), acmeKey, map[string]any{"content": "elsewhere"})

	got := e.get(ref, acmeKey, first.ID, nil)
	require.NotNil(t, got)
	require.Equal(t, first.ID, got.ID)
	require.Equal(t, first.Content, got.Content)
	require.True(t, first.CreatedAt.Equal(got.CreatedAt))
	require.Nil(t, e.get(ref, acmeKey, "0193a1f2-0000-7000-8000-000000000000", nil), "a missing entry is null")
	require.Nil(t, e.get(ref, acmeKey, "not-an-id", nil))
	require.Nil(t, e.get(e.ref("planner", "project-y"), acmeKey, first.ID, nil), "another ref does not reach the entry")

	require.Equal(t, []string{third.ID, second.ID, first.ID}, ids(e.list(ref, acmeKey, nil, nil)), "newest first")
	require.Equal(t, []string{third.ID, first.ID}, ids(e.list(ref, acmeKey, map[string]any{"tag": "ops"}, nil)))
	require.Equal(t, []string{third.ID}, ids(e.list(ref, acmeKey, map[string]any{"tag": "a,b"}, nil)))
	require.Empty(t, e.list(ref, acmeKey, map[string]any{"tag": "a"}, nil))
	require.Equal(t, []string{third.ID, second.ID}, ids(e.list(ref, acmeKey, map[string]any{"limit": 2}, nil)))
	require.Len(t, e.list(ref, acmeKey, map[string]any{"limit": 0}, nil), 3, "0 is no limit")

	require.True(t, e.delete(ref, acmeKey, second.ID))
	require.False(t, e.delete(ref, acmeKey, second.ID), "deleted already")
	require.False(t, e.delete(ref, acmeKey, "not-an-id"))
	require.False(t, e.delete(e.ref("planner", "project-y"), acmeKey, first.ID), "another ref does not reach the entry")
	require.Nil(t, e.get(ref, acmeKey, second.ID, nil))
	require.Equal(t, []string{third.ID, first.ID}, ids(e.list(ref, acmeKey, nil, nil)))
}

// Within a run, list and get read the snapshot of its start: entries
// written or deleted afterwards do not change what it reads (RFC 0004 §A).
func TestOpenWOPSnapshot(t *testing.T) {
	t.Parallel()
	e := setup(t, "", "")
	ref := e.ref("planner", "default")
	before := e.put(ref, acmeKey, map[string]any{"content": "known before the run"})
	runStart := time.Now().UTC()
	require.False(t, before.CreatedAt.After(runStart))

	during := e.put(ref, acmeKey, map[string]any{"content": "written mid-run by another run"})
	require.True(t, during.CreatedAt.After(runStart))
	require.Equal(t, []string{before.ID}, ids(e.list(ref, acmeKey, nil, &runStart)))
	require.Nil(t, e.get(ref, acmeKey, during.ID, &runStart), "created after the snapshot")
	require.NotNil(t, e.get(ref, acmeKey, before.ID, &runStart))

	// A delete is seen by future runs at once, never by the run's snapshot.
	require.True(t, e.delete(ref, acmeKey, before.ID))
	require.Equal(t, []string{before.ID}, ids(e.list(ref, acmeKey, nil, &runStart)), "the replay reads the same entries")
	require.NotNil(t, e.get(ref, acmeKey, before.ID, &runStart))
	require.Equal(t, []string{during.ID}, ids(e.list(ref, acmeKey, nil, nil)))
	nextRun := time.Now().UTC()
	require.Equal(t, []string{during.ID}, ids(e.list(ref, acmeKey, nil, &nextRun)))
	require.Nil(t, e.get(ref, acmeKey, before.ID, &nextRun))

	e.fails("GET", entries(ref)+"?snapshot=yesterday", acmeKey, nil, http.StatusBadRequest, openwop.CodeValidation)
}

// SR-1 (RFC 0004 §D), redacting: secrets in the content and the tags are
// stored as [REDACTED:<label>] markers, and what was stored is what is
// read back.
func TestOpenWOPRedact(t *testing.T) {
	t.Parallel()
	e := setup(t, openwop.OnSecretRedact, "")
	ref := e.ref("planner", "default")
	got := e.put(ref, acmeKey, map[string]any{
		"content": "use key " + awsKey + " and the token " + canary + " for the deploy",
		"tags":    []string{"owner:ada@example.com", "ops"},
	})
	require.Equal(t, "use key [REDACTED:aws_access_key] and the token [REDACTED:literal_secret] for the deploy", got.Content)
	require.Contains(t, got.Tags, "owner:[REDACTED:email]")
	require.Contains(t, got.Tags, "ops")
	require.Contains(t, got.Tags, "pii", "the write path tags a record made from personal data")
	read := e.get(ref, acmeKey, got.ID, nil)
	require.Equal(t, got.Content, read.Content)
	listed := e.list(ref, acmeKey, nil, nil)
	require.Len(t, listed, 1)
	require.Equal(t, got.Content, listed[0].Content)
	for _, s := range []string{awsKey, canary, "ada@example.com"} {
		require.NotContains(t, string(must(json.Marshal(listed))), s)
	}
}

// SR-1, rejecting: a put holding a secret fails with secret_leakage, which
// names the labels and never the value, and nothing is stored; the same
// when the adapter would redact but the policy rejects.
func TestOpenWOPReject(t *testing.T) {
	t.Parallel()
	for name, modes := range map[string][2]string{
		"adapter": {openwop.OnSecretReject, ""},
		"policy":  {openwop.OnSecretRedact, "reject"},
		// A choice that is none fails closed.
		"invalid": {"shred", ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, modes[0], modes[1])
			ref := e.ref("planner", "default")
			msg := e.fails("POST", entries(ref), acmeKey, map[string]any{"content": "the token is " + canary}, http.StatusUnprocessableEntity, openwop.CodeSecretLeakage)
			require.Contains(t, msg, "literal_secret")
			require.NotContains(t, msg, canary)
			_, b := e.do("POST", entries(ref), acmeKey, map[string]any{"content": "fine", "tags": []string{awsKey}})
			require.Contains(t, string(b), openwop.CodeSecretLeakage)
			require.NotContains(t, string(b), awsKey)
			require.Empty(t, e.list(ref, acmeKey, nil, nil))
			e.put(ref, acmeKey, map[string]any{"content": "no secret here"})
			require.Len(t, e.list(ref, acmeKey, nil, nil), 1)
		})
	}
}

// expiresAt (RFC 0004 §E): an entry is never read once it has passed, and
// a put whose expiresAt has passed is a validation_error.
func TestOpenWOPExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t, "", "")
	ref := e.ref("planner", "default")
	msg := e.fails("POST", entries(ref), acmeKey, map[string]any{"content": "stale", "expiresAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)},
		http.StatusBadRequest, openwop.CodeValidation)
	require.Contains(t, msg, "expiresAt")
	e.fails("POST", entries(ref), acmeKey, map[string]any{"content": "x", "expiresAt": "tomorrow"}, http.StatusBadRequest, openwop.CodeValidation)

	short := e.put(ref, acmeKey, map[string]any{"content": "valid for an hour", "expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)})
	long := e.put(ref, acmeKey, map[string]any{"content": "valid for a week", "expiresAt": time.Now().Add(7 * 24 * time.Hour).UTC().Format(time.RFC3339Nano)})
	forever := e.put(ref, acmeKey, map[string]any{"content": "no expiry"})
	runStart := time.Now().UTC()
	require.Equal(t, []string{forever.ID, long.ID, short.ID}, ids(e.list(ref, acmeKey, nil, nil)))

	e.clock.advance(2 * time.Hour)
	require.Equal(t, []string{forever.ID, long.ID}, ids(e.list(ref, acmeKey, nil, nil)))
	require.Equal(t, []string{forever.ID, long.ID}, ids(e.list(ref, acmeKey, nil, &runStart)), "a snapshot does not bring an expired entry back")
	require.Nil(t, e.get(ref, acmeKey, short.ID, nil))
	require.Nil(t, e.get(ref, acmeKey, short.ID, &runStart))
	require.NotNil(t, e.get(ref, acmeKey, long.ID, nil))
	require.Equal(t, []string{forever.ID}, ids(e.list(ref, acmeKey, map[string]any{"limit": 1}, nil)))
	require.False(t, e.delete(ref, acmeKey, short.ID), "an expired entry is gone")

	e.clock.advance(7 * 24 * time.Hour)
	require.Equal(t, []string{forever.ID}, ids(e.list(ref, acmeKey, nil, nil)))
}

// A memoryRef never reaches another tenant's memory (RFC 0004 §F): it is
// bound to the tenant it was issued to, so with another tenant's key it is
// not one this host issued (404 not_found), whatever the call; that
// tenant's own ref of the same agent and namespace is another ref, and its
// writes stay its own.
func TestOpenWOPTenantIsolation(t *testing.T) {
	t.Parallel()
	e := setup(t, "", "")
	ref := e.ref("planner", "shared-name")
	mine := e.put(ref, acmeKey, map[string]any{"content": "acme's plan", "tags": []string{"plan"}})

	later := url.QueryEscape(time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano))
	for _, c := range []struct{ method, path string }{
		{"GET", entries(ref)},
		{"GET", entries(ref) + "?tag=plan"},
		{"GET", entries(ref) + "?snapshot=" + later},
		{"GET", entries(ref) + "/" + mine.ID},
		{"GET", entries(ref) + "/" + mine.ID + "?snapshot=" + later},
		{"DELETE", entries(ref) + "/" + mine.ID},
		{"POST", entries(ref)},
	} {
		msg := e.fails(c.method, c.path, otherKey, map[string]any{"content": "other's plan"}, http.StatusNotFound, openwop.CodeNotFound)
		require.Equal(t, "the memoryRef is not one this host issued to this tenant: ask POST /openwop/v1/memory-refs for one", msg)
	}

	theirRef := e.refFor(otherKey, "planner", "shared-name")
	require.NotEqual(t, ref, theirRef, "a ref is the tenant's")
	require.Empty(t, e.list(theirRef, otherKey, nil, nil))
	require.Nil(t, e.get(theirRef, otherKey, mine.ID, nil))
	require.False(t, e.delete(theirRef, otherKey, mine.ID))
	theirs := e.put(theirRef, otherKey, map[string]any{"content": "other's plan"})
	require.Equal(t, []string{theirs.ID}, ids(e.list(theirRef, otherKey, nil, nil)))
	require.Equal(t, []string{mine.ID}, ids(e.list(ref, acmeKey, nil, nil)), "the other tenant's write is not acme's, nor did its delete reach acme")
	require.Nil(t, e.get(ref, acmeKey, theirs.ID, nil))
	require.NotNil(t, e.get(ref, acmeKey, mine.ID, nil))
}

// Only a memoryRef the host issued is accepted (RFC 0004 §C: host-issued):
// one made by hand — mem_ and the base64url of another agent and namespace,
// as the refs looked before they were signed — or an issued one altered is
// 404 not_found, whatever the call, and nothing is written.
func TestOpenWOPForgedRef(t *testing.T) {
	t.Parallel()
	e := setup(t, "", "")
	ref := e.ref("planner", "default")
	mine := e.put(ref, acmeKey, map[string]any{"content": "planner's plan"})
	coder := e.ref("coder", "default")
	// body and signature of an issued ref.
	cut := func(r string) (string, string) {
		if i := strings.LastIndexByte(r, '.'); i >= 0 {
			return r[:i], r[i:]
		}
		return r, ""
	}
	coderBody, _ := cut(coder)
	_, refSig := cut(ref)
	forged := []string{
		"mem_" + base64.RawURLEncoding.EncodeToString([]byte("planner/default")),
		"mem_" + base64.RawURLEncoding.EncodeToString([]byte("coder/default")),
		"mem_" + base64.RawURLEncoding.EncodeToString([]byte("coder/default")) + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 16)),
		// An issued ref's signature under another agent's name.
		coderBody + refSig,
		ref[:len(ref)-1] + map[bool]string{true: "B", false: "A"}[strings.HasSuffix(ref, "A")],
		ref + "A",
		"urn:other-host:1",
		"mem_" + canary,
	}
	for _, bad := range forged {
		for _, c := range []struct{ method, path string }{
			{"GET", entries(bad)},
			{"POST", entries(bad)},
			{"GET", entries(bad) + "/" + mine.ID},
			{"DELETE", entries(bad) + "/" + mine.ID},
		} {
			msg := e.fails(c.method, c.path, acmeKey, map[string]any{"content": "forged"}, http.StatusNotFound, openwop.CodeNotFound)
			require.NotContains(t, msg, canary)
		}
	}
	require.Equal(t, []string{mine.ID}, ids(e.list(ref, acmeKey, nil, nil)), "nothing was written or deleted")
	require.Empty(t, e.list(coder, acmeKey, nil, nil))
}

// Errors are the OpenWOP error envelope, with the code's status.
func TestOpenWOPErrors(t *testing.T) {
	t.Parallel()
	e := setup(t, "", "")
	ref := e.ref("planner", "default")
	e.fails("GET", entries(ref), "", nil, http.StatusUnauthorized, openwop.CodeUnauthenticated)
	e.fails("GET", entries(ref), "no-such-key-0123456789", nil, http.StatusUnauthorized, openwop.CodeUnauthenticated)
	e.fails("POST", entries(ref), opsKey, map[string]any{"content": "x"}, http.StatusForbidden, openwop.CodeForbidden)
	msg := e.fails("GET", entries("mem_"+canary), acmeKey, nil, http.StatusNotFound, openwop.CodeNotFound)
	require.NotContains(t, msg, canary)
	e.fails("GET", entries("urn:other-host:1"), acmeKey, nil, http.StatusNotFound, openwop.CodeNotFound)

	for _, bad := range []any{
		map[string]any{},
		map[string]any{"content": nil},
		map[string]any{"content": 7},
		map[string]any{"content": "x", "id": "mine"},
		map[string]any{"content": "x", "createdAt": "2026-01-01T00:00:00Z"},
		map[string]any{"content": "x", "color": "red"},
		map[string]any{"content": "x", "tags": "ops"},
		map[string]any{"content": "x", "tags": []string{strings.Repeat("t", 257)}},
		[]byte(`["content"]`),
		[]byte(`{"content":`),
	} {
		e.fails("POST", entries(ref), acmeKey, bad, http.StatusBadRequest, openwop.CodeValidation)
	}
	// capabilities.schema.json: a put over maxEntrySizeBytes is a
	// validation_error; a body over the adapter's cap is too large.
	msg = e.fails("POST", entries(ref), acmeKey, map[string]any{"content": strings.Repeat("x", openwop.MaxEntryBytes+1)}, http.StatusBadRequest, openwop.CodeValidation)
	require.Contains(t, msg, "maxEntrySizeBytes")
	e.put(ref, acmeKey, map[string]any{"content": strings.Repeat("x", openwop.MaxEntryBytes)})
	many := make([]string, 1000)
	for i := range many {
		many[i] = strings.Repeat("t", 200)
	}
	e.fails("POST", entries(ref), acmeKey, map[string]any{"content": "x", "tags": many}, http.StatusRequestEntityTooLarge, openwop.CodeTooLarge)
	for _, q := range []string{"limit=-1", "limit=ten", "tag=", "tag=" + strings.Repeat("t", 257), "cursor=x"} {
		e.fails("GET", entries(ref)+"?"+q, acmeKey, nil, http.StatusBadRequest, openwop.CodeValidation)
	}
	msg = e.fails("GET", entries(ref)+"?cursor=x", acmeKey, nil, http.StatusBadRequest, openwop.CodeValidation)
	require.Equal(t, "cursor is not a parameter here; use limit, tag, snapshot", msg)
	msg = e.fails("DELETE", entries(ref)+"/"+uuid.NewString()+"?force=1", acmeKey, nil, http.StatusBadRequest, openwop.CodeValidation)
	require.Equal(t, "force is not a parameter here; this call takes none", msg)
	// A name the caller sent is quoted only when it holds no secret.
	msg = e.fails("GET", entries(ref)+"?"+canary+"=1", acmeKey, nil, http.StatusBadRequest, openwop.CodeValidation)
	require.Equal(t, "a query parameter is not one of this call's; use limit, tag, snapshot", msg)
	msg = e.fails("POST", entries(ref), acmeKey, map[string]any{"content": "x", canary: "y"}, http.StatusBadRequest, openwop.CodeValidation)
	require.Equal(t, "the body has a field that is not one of a memory entry's: content, tags, expiresAt", msg)
	msg = e.fails("POST", entries(ref), acmeKey, map[string]any{"content": "x", "color": "red"}, http.StatusBadRequest, openwop.CodeValidation)
	require.Equal(t, "/color is not a field of a memory entry", msg)
	status, _, b := e.send(canary, entries(ref), acmeKey, "application/json", nil)
	require.Equal(t, http.StatusMethodNotAllowed, status)
	require.NotContains(t, string(b), canary)
	require.Contains(t, string(b), "this path serves GET, HEAD, POST only")
	e.fails("POST", "/openwop/v1/memory-refs", "", map[string]any{"agentId": "planner"}, http.StatusUnauthorized, openwop.CodeUnauthenticated)
	msg = e.fails("POST", "/openwop/v1/memory-refs", opsKey, map[string]any{"agentId": "planner"}, http.StatusForbidden, openwop.CodeForbidden)
	require.Equal(t, "an operator key reads and writes no tenant's memory: use a key of the tenant", msg)
	msg = e.fails("POST", "/openwop/v1/memory-refs", acmeKey, map[string]any{"namespace": "x"}, http.StatusBadRequest, openwop.CodeValidation)
	require.Equal(t, "agentId is required: this key names no agent of its own", msg)
	e.fails("POST", "/openwop/v1/memory-refs", acmeKey, map[string]any{"agentId": "a/b"}, http.StatusBadRequest, openwop.CodeValidation)
	e.fails("POST", "/openwop/v1/memory-refs", acmeKey, map[string]any{"agentId": "planner", "namespace": "x y"}, http.StatusBadRequest, openwop.CodeValidation)
	e.fails("POST", "/openwop/v1/memory-refs", acmeKey, map[string]any{"agent": "planner"}, http.StatusBadRequest, openwop.CodeValidation)
	// A name the redactor would change could not find its own entries.
	msg = e.fails("POST", "/openwop/v1/memory-refs", acmeKey, map[string]any{"agentId": "ada@example.com"}, http.StatusBadRequest, openwop.CodeValidation)
	require.NotContains(t, msg, "ada@example.com")
	require.Equal(t, e.ref("planner", "default"), e.ref("planner", ""), "the default namespace")
}

// A memoryRef resolves to the agent and namespace it was issued for, for
// the tenant it was issued to, by a signer holding the secret it was signed
// with; any other string, or another tenant, is not_found.
func TestRefSigner(t *testing.T) {
	t.Parallel()
	old, cur := openwop.NewRefSigner("old-secret-0123456789abcdef0123456789"), openwop.NewRefSigner("new-secret-0123456789abcdef0123456789", "old-secret-0123456789abcdef0123456789")
	notFound := func(s *openwop.RefSigner, tenant, ref string) {
		t.Helper()
		_, err := s.Resolve(tenant, ref)
		var e *openwop.Error
		require.ErrorAs(t, err, &e, ref)
		require.Equal(t, openwop.CodeNotFound, e.Code, ref)
	}
	for _, ref := range []openwop.MemoryRef{{Agent: "planner", Namespace: "default"}, {Agent: "a.b:c@d-e_f", Namespace: "x"}, {Agent: "p", Namespace: "ns:with:colons"}} {
		for _, s := range []*openwop.RefSigner{old, cur} {
			got, err := cur.Resolve("acme", s.Issue("acme", ref))
			require.NoError(t, err, "the current secret and the one rotated out both resolve")
			require.Equal(t, ref, got)
			notFound(cur, "other", s.Issue("acme", ref))
		}
		notFound(old, "acme", cur.Issue("acme", ref))
		notFound(openwop.NewRefSigner(), "acme", cur.Issue("acme", ref))
		if len(ref.Agent) > 3 {
			require.NotContains(t, cur.Issue("acme", ref), ref.Agent, "a ref is opaque")
		}
	}
	require.NotEqual(t, cur.Issue("acme", openwop.MemoryRef{Agent: "a", Namespace: "bc"}), cur.Issue("acme", openwop.MemoryRef{Agent: "ab", Namespace: "c"}))
	require.NotEqual(t, cur.Issue("acme", openwop.MemoryRef{Agent: "a", Namespace: "b"}), cur.Issue("other", openwop.MemoryRef{Agent: "a", Namespace: "b"}))
	good := cur.Issue("acme", openwop.MemoryRef{Agent: "planner", Namespace: "default"})
	for _, s := range []string{"", "mem_", "mem_!!", "planner/default", "mem_cGxhbm5lcg", "mem_L2RlZmF1bHQ", "mem_cC9hL2I",
		good + "=", good + ".", strings.Replace(good, "mem_", "MEM_", 1), good[:len(good)-2]} {
		notFound(cur, "acme", s)
	}
}

// Every error on the OpenWOP routes is the OpenWOP error envelope, unknown
// paths and wrong methods under the prefix included; a body that is not
// JSON is 415.
func TestOpenWOPErrorsOnThePrefix(t *testing.T) {
	t.Parallel()
	e := setup(t, "", "")
	ref := e.ref("planner", "default")
	for _, path := range []string{"/openwop", "/openwop/", "/openwop/v1", "/openwop/v2/memory", "/openwop/v1/memory/" + ref, entries(ref) + "/x/y", "/.well-known/openwop/x"} {
		msg := e.fails("GET", path, acmeKey, nil, http.StatusNotFound, openwop.CodeNotFound)
		require.Contains(t, msg, "no OpenWOP route", path)
	}
	for _, c := range []struct{ method, path, allow string }{
		{"PUT", entries(ref), "GET, HEAD, POST"},
		{"PATCH", entries(ref) + "/0193a1f2-0000-7000-8000-000000000000", "DELETE, GET, HEAD"},
		{"GET", "/openwop/v1/memory-refs", "POST"},
		{"POST", "/.well-known/openwop", "GET, HEAD"},
	} {
		status, h, b := e.send(c.method, c.path, acmeKey, "application/json", map[string]any{})
		require.Equal(t, http.StatusMethodNotAllowed, status, "%s %s: %s", c.method, c.path, b)
		validate(t, errorEnvelopeSchemaID, b)
		require.Contains(t, string(b), `"error":"`+openwop.CodeMethodNotAllowed+`"`)
		require.Equal(t, c.allow, h.Get("Allow"), "%s %s", c.method, c.path)
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"} {
		for _, path := range []string{entries(ref), "/openwop/v1/memory-refs"} {
			status, _, b := e.send("POST", path, acmeKey, ct, []byte(`{"content": "x", "agentId": "planner"}`))
			require.Equal(t, http.StatusUnsupportedMediaType, status, "%s %s: %s", ct, path, b)
			validate(t, errorEnvelopeSchemaID, b)
			require.Contains(t, string(b), `"error":"`+openwop.CodeUnsupportedMediaType+`"`)
			require.Contains(t, string(b), "application/json")
		}
	}
	require.Empty(t, e.list(ref, acmeKey, nil, nil), "nothing was written")
	// JSON by another name is JSON.
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON", "application/merge-patch+json"} {
		status, _, b := e.send("POST", entries(ref), acmeKey, ct, map[string]any{"content": "x"})
		require.Equal(t, http.StatusCreated, status, "%s: %s", ct, b)
	}
}

// An agent's own key does the agent's work (issue 27): an executor puts,
// lists, gets and deletes its own agent's entries, with the ref of its own
// agent by default; an orchestrator does so for the agents of its tasks.
func TestOpenWOPAgentKeys(t *testing.T) {
	t.Parallel()
	e := setup(t, "", "")
	ref := e.refFor(executorKey, "", "default")
	require.Equal(t, e.refFor(executorKey, "planner", "default"), ref, "an executor's ref is its own agent's by default")
	mine := e.put(ref, executorKey, map[string]any{"content": "the build needs make 4", "tags": []string{"source:session"}})
	require.Equal(t, []string{mine.ID}, ids(e.list(ref, executorKey, nil, nil)))
	require.NotNil(t, e.get(ref, executorKey, mine.ID, nil))
	require.True(t, e.delete(ref, executorKey, mine.ID))
	require.Empty(t, e.list(ref, executorKey, nil, nil))
	require.False(t, e.delete(ref, executorKey, mine.ID))

	// The orchestrator writes for the agents of its tasks, planner's too.
	for _, agent := range []string{"coder", "planner"} {
		r := e.refFor(orchestratorKey, agent, "default")
		require.Equal(t, e.refFor(acmeKey, agent, "default"), r, "a ref is the tenant's, whoever asked for it")
		got := e.put(r, orchestratorKey, map[string]any{"content": "the task of " + agent})
		require.Equal(t, []string{got.ID}, ids(e.list(r, orchestratorKey, nil, nil)))
		require.True(t, e.delete(r, orchestratorKey, got.ID))
		require.Empty(t, e.list(r, orchestratorKey, nil, nil))
	}
	require.Empty(t, e.list(ref, executorKey, nil, nil))
}

// An agent's key does nothing its role may not (issue 27): an executor
// writes and deletes no other agent's entries, a verifier writes and
// deletes none, and each refusal says why, grammatically, in the envelope;
// nothing is written or deleted.
func TestOpenWOPAgentKeyRefusals(t *testing.T) {
	t.Parallel()
	e := setup(t, "", "")
	coder := e.refFor(executorKey, "coder", "default")
	theirs := e.put(coder, orchestratorKey, map[string]any{"content": "coder's note"})

	msg := e.fails("POST", entries(coder), executorKey, map[string]any{"content": "planner writing as coder"}, http.StatusForbidden, openwop.CodeForbidden)
	require.Equal(t, "an executor key may write only its own agent's semantic memory", msg)
	msg = e.fails("DELETE", entries(coder)+"/"+theirs.ID, executorKey, nil, http.StatusForbidden, openwop.CodeForbidden)
	require.Equal(t, "an executor key may delete only its own agent's semantic memory", msg)
	// Facts are a shared layer: an executor reads every agent's (the
	// role matrix), as retrieval would give them to it.
	require.Equal(t, []string{theirs.ID}, ids(e.list(coder, executorKey, nil, nil)))

	ref := e.refFor(verifierKey, "", "default")
	require.Equal(t, e.refFor(verifierKey, "checker", "default"), ref)
	msg = e.fails("POST", entries(ref), verifierKey, map[string]any{"content": "a verifier's note"}, http.StatusForbidden, openwop.CodeForbidden)
	require.Equal(t, "a verifier key may not write semantic memory", msg)
	msg = e.fails("DELETE", entries(coder)+"/"+theirs.ID, verifierKey, nil, http.StatusForbidden, openwop.CodeForbidden)
	require.Equal(t, "a verifier key may not delete semantic memory", msg)
	require.Equal(t, []string{theirs.ID}, ids(e.list(coder, verifierKey, nil, nil)))

	require.Equal(t, []string{theirs.ID}, ids(e.list(coder, acmeKey, nil, nil)), "nothing was written or deleted")
	require.Empty(t, e.list(ref, acmeKey, nil, nil))
}

// A spent write budget (write-path RFC §12.11.2) is rate_limited, with
// Retry-After, in the envelope; reads go on.
func TestOpenWOPRateLimited(t *testing.T) {
	t.Parallel()
	e := setupBudgets(t, "", "", access.Budgets{Writes: map[access.Role]int{access.Executor: 1}})
	ref := e.refFor(executorKey, "", "default")
	first := e.put(ref, executorKey, map[string]any{"content": "the one write of this session"})
	status, h, b := e.send("POST", entries(ref), executorKey, "application/json", map[string]any{"content": "one too many"})
	require.Equal(t, http.StatusTooManyRequests, status, string(b))
	validate(t, errorEnvelopeSchemaID, b)
	require.Contains(t, string(b), `"error":"`+openwop.CodeRateLimited+`"`)
	require.Contains(t, string(b), `"message":"write budget write:executor spent: 1 write per session window for agent \"planner\""`)
	require.NotEmpty(t, h.Get("Retry-After"))
	require.Equal(t, []string{first.ID}, ids(e.list(ref, executorKey, nil, nil)))
}
