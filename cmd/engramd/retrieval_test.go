package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// engramd's retriever redacts with the policy plane's policy, the one
// SIGHUP reloads: the operator's literals are redacted at read time, and a
// reloaded policy's replace them.
func TestRetrievalRedactsWithThePolicyPlanesPolicy(t *testing.T) {
	t.Parallel()
	const alpha, beta = "alpha-internal-token-1", "beta-internal-token-2"
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	first, err := policy.Parse([]byte("secrets: {literals: ["+alpha+"]}\n"), "first")
	require.NoError(t, err)
	second, err := policy.Parse([]byte("secrets: {literals: ["+beta+"]}\n"), "second")
	require.NoError(t, err)
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Policy: first})

	cfg := config.Default()
	cfg.Retrieve.Trust.AtLimit = map[memory.Sensitivity]retrieve.Gating{memory.Medium: retrieve.Redact}
	ret, err := newRetrieval(cfg, db.Pool, w.Policy, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	payload, err := json.Marshal(map[string]any{"kind": "semantic", "subject": "deploy", "predicate": "credential",
		"object": "deploy with " + alpha + " or " + beta, "validity": map[string]any{"mode": "global"}})
	require.NoError(t, err)
	_, err = revise.New(db.Pool, revise.Config{}).Create(ctx, "acme",
		memory.Record{Type: memory.Semantic, Sensitivity: memory.Medium, Confidence: 0.9, Payload: payload}, revise.Change{Actor: "test"})
	require.NoError(t, err)

	object := func() string {
		t.Helper()
		res, err := ret.retriever.Retrieve(ctx, "acme", retrieve.Request{Task: retrieve.Task{Text: "how to deploy"}})
		require.NoError(t, err)
		for _, l := range res.Layers {
			for _, it := range l.Items {
				require.Equal(t, retrieve.Redact, it.Gating)
				var p struct{ Object string }
				require.NoError(t, json.Unmarshal(it.Record.Payload, &p))
				return p.Object
			}
		}
		require.FailNow(t, "nothing retrieved")
		return ""
	}
	require.Equal(t, "deploy with [REDACTED:literal_secret] or "+beta, object())
	w.SetPolicy(second) // what SIGHUP does (reloadPolicyOnHUP)
	require.Equal(t, "deploy with "+alpha+" or [REDACTED:literal_secret]", object())
}
