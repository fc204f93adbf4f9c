package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// Retrieval's read-side redaction uses the policy in force, as engramd
// wires it: a record at the caller's clearance limit, gated redact, comes
// back with the operator's literal secrets redacted, and after the policy
// is swapped (as SIGHUP does), with the new policy's (SR-1).
func TestRetrievalRedactsWithThePolicyInForce(t *testing.T) {
	t.Parallel()
	const alpha, beta = "alpha-internal-token-1", "beta-internal-token-2"
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	wr := revise.New(db.Pool, revise.Config{})
	first, err := policy.Parse([]byte("secrets: {literals: ["+alpha+"]}\n"), "first")
	require.NoError(t, err)
	second, err := policy.Parse([]byte("secrets: {literals: ["+beta+"]}\n"), "second")
	require.NoError(t, err)
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Policy: first})
	cfg := retrieve.DefaultConfig()
	cfg.Trust.AtLimit[memory.Medium] = retrieve.Redact
	rs, err := retrieve.NewSettings(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Policy: w.Policy,
		Retrieve: retrieve.New(db.Pool, rs, retrieve.WithRedactor(func() *policy.Redactor { return w.Policy().Redactor() })),
		Keys:     []server.Key{{Tenant: "acme", Name: "acme-test", Secret: acmeKey, Role: server.RoleCurator}},
	}))
	t.Cleanup(srv.Close)
	e := &env{t: t, url: srv.URL, db: db}

	// Stored before the operator listed the values as secrets: the records
	// API would have redacted them on the way in.
	payload, err := json.Marshal(map[string]any{"kind": "semantic", "subject": "deploy", "predicate": "credential",
		"object": "deploy with " + alpha + " or " + beta, "validity": map[string]any{"mode": "global"}})
	require.NoError(t, err)
	rec, err := wr.Create(ctx, "acme", memory.Record{Type: memory.Semantic, Sensitivity: memory.Medium, Confidence: 0.9, Payload: payload},
		revise.Change{Actor: "test"})
	require.NoError(t, err)

	retrieved := func() retrieve.Item {
		t.Helper()
		res := e.do("POST", "/v1/retrieve", acmeKey, map[string]any{"task": map[string]any{"text": "how to deploy"}})
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var out retrieve.Result
		res.decode(t, &out)
		require.Equal(t, memory.Medium, out.Clearance)
		for _, l := range out.Layers {
			for _, it := range l.Items {
				if it.Record.ID == rec.ID {
					return it
				}
			}
		}
		require.FailNow(t, "the record was not retrieved", string(res.body))
		return retrieve.Item{}
	}

	it := retrieved()
	require.Equal(t, retrieve.Redact, it.Gating)
	require.NotContains(t, string(it.Record.Payload), alpha)
	require.Contains(t, string(it.Record.Payload), "[REDACTED:literal_secret]")
	require.Contains(t, string(it.Record.Payload), beta, "not a secret of the first policy")

	w.SetPolicy(second)
	it = retrieved()
	require.NotContains(t, string(it.Record.Payload), beta)
	require.Contains(t, string(it.Record.Payload), alpha, "not a secret of the second policy")
	stored, err := store.Get(ctx, db.Pool, "acme", rec.ID)
	require.NoError(t, err)
	require.Contains(t, string(stored.Payload), alpha+" or "+beta, "gating works on a copy")
}
