package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// setupMetrics is setup with the write path's and the review queue's
// metrics on the server's registry, as engramd wires them.
func setupMetrics(t *testing.T) (*env, *revise.Writer) {
	t.Helper()
	db := pgtest.NewSchema(t)
	reg := prometheus.NewRegistry()
	wr := revise.New(db.Pool, revise.Config{Registry: reg})
	revise.NewEscalator(wr, revise.EscalatorConfig{Registry: reg})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, tenant))
	}
	srv := httptest.NewServer(server.New(server.Config{DB: db.Pool, Writer: wr, Keys: testKeys, Registry: reg}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, db: db}, wr
}

// After writes through the API — two created, a duplicate absorbed, a
// contradiction refused — GET /v1/stats/writes counts them by layer and
// outcome with their rates, the refusal by gate and reason, each gate's
// latency, and the review queue from the database; it takes an operator
// key.
func TestWriteStats(t *testing.T) {
	t.Parallel()
	e, wr := setupMetrics(t)
	start := time.Now()

	// A person's word, then the same again (absorbed), then a bare
	// contradiction it clearly outweighs (refused).
	stated := factBody("go", nil)
	stated["provenance"] = map[string]any{"sources": []any{map[string]any{"kind": "human", "ref": "person://lead"}}}
	res := e.do("POST", "/v1/records", acmeKey, stated)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	res = e.do("POST", "/v1/records", acmeKey, stated)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "absorbed", res.header.Get("Engram-Write-Outcome"))
	res = e.do("POST", "/v1/records", acmeKey, factBody("rust", nil))
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "urn:engram:problem:write-rejected", res.problem(t).Type)
	res = e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "working", "payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "planning"}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))

	_, rv, err := wr.SubmitForReview(t.Context(), "acme", memory.Record{Type: memory.Semantic, Confidence: 0.8,
		Payload:    []byte(`{"kind": "semantic", "subject": "user", "predicate": "prefers_editor", "object": "vim", "validity": {"mode": "global"}}`),
		Provenance: memory.Provenance{Sources: []memory.Source{{Kind: "event", Ref: "evt://1"}}}},
		revise.Change{Actor: "test"}, revise.ReviewRequest{Tier: revise.TierAsync, Risk: 0.5})
	require.NoError(t, err)

	require.Equal(t, http.StatusForbidden, e.do("GET", "/v1/stats/writes", acmeKey, nil).status, "a tenant's key")
	require.Equal(t, http.StatusUnauthorized, e.do("GET", "/v1/stats/writes", "", nil).status)
	res = e.do("GET", "/v1/stats/writes", opsKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var st api.WriteStats
	res.decode(t, &st)

	require.False(t, st.Since.After(start), "since is the server's start")
	require.False(t, st.At.Before(start))
	rate := func(f float64) *float64 { return &f }
	require.Equal(t, []api.LayerWrites{
		{Layer: "working", Writes: 1, Outcomes: api.WriteOutcomes{Created: 1}, AcceptanceRate: rate(1), WAR: rate(1), DedupHitRate: rate(0)},
		{Layer: "semantic", Writes: 3, Outcomes: api.WriteOutcomes{Created: 1, Absorbed: 1, Rejected: 1},
			AcceptanceRate: rate(2.0 / 3), WAR: rate(1.0 / 3), DedupHitRate: rate(1.0 / 3)},
	}, st.Layers)
	require.Equal(t, api.LayerWrites{Writes: 4, Outcomes: api.WriteOutcomes{Created: 2, Absorbed: 1, Rejected: 1},
		AcceptanceRate: rate(0.75), WAR: rate(0.5), DedupHitRate: rate(0.25)}, st.All)
	require.Equal(t, []api.WriteRejection{{Gate: "contradiction", Reason: "contradiction", Count: 1, Share: 1}}, st.Rejections)

	gates := map[string]api.GateLatency{}
	var order []string
	for _, g := range st.Gates {
		gates[g.Gate] = g
		order = append(order, g.Gate)
		require.Positive(t, g.P50Seconds, g.Gate)
		require.LessOrEqual(t, g.P50Seconds, g.P95Seconds, g.Gate)
		require.LessOrEqual(t, g.P95Seconds, g.P99Seconds, g.Gate)
	}
	require.Equal(t, []string{"schema", "evidence", "contradiction", "dedup", "provenance", "approval"}, order)
	require.Equal(t, int64(4), gates["schema"].Count, "every write")
	require.Equal(t, int64(3), gates["contradiction"].Count, "facts only")
	require.Zero(t, st.TamperedStamps)

	q := st.Reviews
	require.Equal(t, int64(1), q.Pending)
	require.NotNil(t, q.OldestAt)
	require.True(t, rv.CreatedAt.Equal(*q.OldestAt))
	require.GreaterOrEqual(t, q.OldestAgeSeconds, 0.0)
	require.Equal(t, []api.TenantReviewQueue{{Tenant: "acme", Pending: 1, OldestAt: *q.OldestAt, OldestAgeSeconds: q.OldestAgeSeconds}}, q.Tenants)
	require.Zero(t, q.Escalations)
}

// Without writes nor reviews the answer is empty but whole: no layer, no
// rate, no gate, an empty queue.
func TestWriteStatsEmpty(t *testing.T) {
	t.Parallel()
	e, _ := setupMetrics(t)
	res := e.do("GET", "/v1/stats/writes", opsKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.JSONEq(t, `{"layers": [], "all": {"writes": 0, "outcomes": {"created": 0, "absorbed": 0, "merged": 0, "contested": 0, "queued": 0, "rejected": 0}},
		"rejections": [], "gates": [], "tampered_stamps": 0, "reviews": {"pending": 0, "oldest_age_seconds": 0, "tenants": [], "escalations": 0}}`,
		string(withoutTimes(t, res.body)))
}

// withoutTimes is a JSON object without its since and at.
func withoutTimes(t *testing.T, b []byte) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Contains(t, m, "since")
	require.Contains(t, m, "at")
	delete(m, "since")
	delete(m, "at")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}
