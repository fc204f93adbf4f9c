package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

func setupRetrieve(t *testing.T) *env {
	t.Helper()
	db := pgtest.NewSchema(t)
	wr := revise.New(db.Pool, revise.Config{})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, tenant))
	}
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Decay: decay.New(db.Pool, wr, settings), Retrieve: retrieve.New(db.Pool, rs),
		Keys: []server.Key{{Tenant: "acme", Name: "acme-test", Secret: acmeKey, Role: server.RoleCurator}, {Tenant: "other", Name: "other-test", Secret: otherKey, Role: server.RoleCurator}},
	}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, db: db}
}

// POST /v1/retrieve answers by layer; feedback on its retrieval id
// reinforces exactly the records it returned, and no other tenant can use
// the id.
func TestRetrieveThenFeedback(t *testing.T) {
	t.Parallel()
	e := setupRetrieve(t)
	var ids []string
	for _, obj := range []string{"kubectl apply -k overlays/prod", "helm upgrade --install"} {
		res := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "semantic", "payload": map[string]any{
			"kind": "semantic", "subject": "deploy " + obj, "predicate": "command", "object": obj, "validity": map[string]any{"mode": "global"}}})
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
		var rec memory.Record
		res.decode(t, &rec)
		ids = append(ids, rec.ID.String())
	}

	res := e.do("POST", "/v1/retrieve", acmeKey, map[string]any{"task": map[string]any{"text": "how to deploy with kubectl"}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var out retrieve.Result
	res.decode(t, &out)
	require.True(t, out.LexicalOnly, "this server has no embedder")
	var sem retrieve.Layer
	for _, l := range out.Layers {
		if l.Name == retrieve.LayerSemantic {
			sem = l
		}
	}
	require.NotEmpty(t, sem.Items)
	returned := map[string]bool{}
	for _, it := range sem.Items {
		returned[it.Record.ID.String()] = true
	}

	// Another tenant cannot give feedback on it.
	res = e.do("POST", "/v1/feedback", otherKey, map[string]any{"retrieval_id": out.RetrievalID, "outcome": "used_success"})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Contains(t, string(res.body), "no such retrieval")

	res = e.do("POST", "/v1/feedback", acmeKey, map[string]any{"retrieval_id": out.RetrievalID, "outcome": "used_failure"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var fb struct {
		Applied int `json:"applied"`
		Records []struct {
			ID string `json:"id"`
		} `json:"records"`
	}
	res.decode(t, &fb)
	require.Equal(t, len(returned), fb.Applied)
	for _, r := range fb.Records {
		require.True(t, returned[r.ID])
	}
	// Again: counted once.
	res = e.do("POST", "/v1/feedback", acmeKey, map[string]any{"retrieval_id": out.RetrievalID, "outcome": "used_failure"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res.decode(t, &fb)
	require.Zero(t, fb.Applied)

	// A record the retrieval did not return is refused.
	var notReturned string
	for _, id := range ids {
		if !returned[id] {
			notReturned = id
		}
	}
	if notReturned != "" {
		res = e.do("POST", "/v1/feedback", acmeKey, map[string]any{"retrieval_id": out.RetrievalID, "record_ids": []string{notReturned}, "outcome": "unused"})
		require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	}
}

// Bad descriptors are precise problems.
func TestRetrieveRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := setupRetrieve(t)
	for body, pointer := range map[string]string{
		`{"task": {}}`: "/task",
		`{"task": {"text": "x"}, "trust": {"clearance": "top-secret"}}`: "/trust/clearance",
		`{"task": {"text": "x"}, "budget": {"items": 0}}`:               "/budget/items",
		`{"task": {"text": "x", "conditions": {"os": ["linux"]}}}`:      "/task/conditions/os",
		`{"task": {"text": "x"}, "budget": {"tokens": 99999999}}`:       "/budget/tokens",
	} {
		res := e.do("POST", "/v1/retrieve", acmeKey, body)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, body)
		require.Equal(t, "application/problem+json", res.header.Get("Content-Type"))
		require.Contains(t, string(res.body), `"pointer":"`+pointer+`"`, body)
	}
	res := e.do("POST", "/v1/retrieve", acmeKey, `{"task": {"text": "x"}, "extra": 1}`)
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Contains(t, string(res.body), `"pointer":"/extra"`)
	res = e.do("POST", "/v1/retrieve", acmeKey, `{"task": {"text": "x"`)
	require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
}

// Provenance-weighted retrieval (write-path RFC §12.4.6) reads the write
// path's own authority table: at equal relevance, confidence and salience,
// a fact a person stated (source kind human, authority 1) ranks above one
// an event brought (0.6), with the default configuration.
func TestRetrieveHumanStatementOutranksEvent(t *testing.T) {
	t.Parallel()
	e := setupRetrieve(t)
	ids := map[string]string{}
	for subject, kind := range map[string]string{"payments service": "event", "billing service": "human"} {
		res := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "semantic", "confidence": 0.8,
			"provenance": map[string]any{"sources": []any{map[string]any{"kind": kind, "ref": kind + "://1"}}},
			"payload": map[string]any{"kind": "semantic", "subject": subject, "predicate": "port", "object": "8080",
				"validity": map[string]any{"mode": "global"}}})
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
		var rec memory.Record
		res.decode(t, &rec)
		ids[kind] = rec.ID.String()
	}
	res := e.do("POST", "/v1/retrieve", acmeKey, map[string]any{"task": map[string]any{"text": "which port does the service use"}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var out retrieve.Result
	res.decode(t, &out)
	var items []retrieve.Item
	for _, l := range out.Layers {
		if l.Name == retrieve.LayerSemantic {
			items = l.Items
		}
	}
	require.Len(t, items, 2)
	require.InDelta(t, items[0].Why.Relevance, items[1].Why.Relevance, 1e-9, "equal relevance")
	require.Equal(t, ids["human"], items[0].Record.ID.String(), "the person's word ranks first")
	require.Equal(t, 1.0, items[0].Why.Provenance)
	require.Equal(t, 0.6, items[1].Why.Provenance)
}
